"""What an object store's failure says: its cause, with S3's error code
read from the chain of causes (access denied, bad credentials), and advice
for the faults a user can fix (network, the endpoint, a missing bucket)."""

from __future__ import annotations

import os
from collections.abc import Iterator

NO_BUCKET = "the bucket does not exist (any more): create it or fix the URL"


def bucket_gone(e: BaseException) -> bool:
    cause = e.__cause__
    error = getattr(cause, "response", None) or {}
    code = error.get("Error", {}).get("Code") if isinstance(error, dict) else None
    return code == "NoSuchBucket" or "bucket does not exist" in str(e)


def network_advice(e: BaseException, s3: bool = False) -> str:
    """Network advice, for network faults only; on S3, where the endpoint
    came from, since a wrong AWS_ENDPOINT_URL fails just like no network."""
    for link in _chain(e):
        names = [c.__name__ for c in type(link).__mro__]
        if isinstance(link, (ConnectionError, TimeoutError)) or any(
            "Connect" in n or "Timeout" in n for n in names
        ):
            if not s3:
                return "check the URL, credentials and network"
            env = os.environ.get("AWS_ENDPOINT_URL")
            now = f"AWS_ENDPOINT_URL={env}" if env else "AWS_ENDPOINT_URL is unset: AWS itself"
            return (
                "check the URL, credentials and network, and the endpoint: the store's "
                f"endpoint_url= if given, else $AWS_ENDPOINT_URL ({now})"
            )
    return ""


# S3's answer to credentials it knows but that may not do this (an IAM or
# bucket policy, or a bucket of another account): other keys will not help.
_DENIED = (
    " (the credentials were accepted but are not allowed this: durable needs s3:ListBucket "
    "on the bucket and s3:GetObject, s3:PutObject and s3:DeleteObject under the store's "
    "prefix; grant them, or use credentials that have them: AWS_PROFILE, "
    "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or key=/secret=)"
)


def _error_code(e: BaseException) -> str | None:
    """S3's error code (AccessDenied, NoSuchBucket, ...) in the chain of causes."""
    for link in _chain(e):
        error = getattr(link, "response", None)
        if isinstance(error, dict) and isinstance(error.get("Error"), dict):
            return str(error["Error"].get("Code"))
    return None


def cause_text(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    if _error_code(e) == "AccessDenied":
        text += _DENIED
    elif isinstance(e, PermissionError) or "credential" in text.lower():
        text += " (check the credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or key=/secret=)"
    return text


def _chain(e: BaseException) -> Iterator[BaseException]:
    """e, then its causes (explicit, else implicit): eight at the most, never walked forever."""
    link: BaseException | None = e
    for _ in range(8):
        if link is None:
            return
        yield link
        link = link.__cause__ or link.__context__
