"""Deleting objects on S3, with S3's answer about each key read.

DeleteObjects answers 200 and names, in its body, each key it did not
delete: AccessDenied under a policy without s3:DeleteObject, InternalError
or SlowDown for some keys. s3fs's `rm` drops those errors, and an object
taken for deleted that is still there is read back later: a single object
a segment covers after the holder merged its segments (a merge keeps no
deletions), a run's objects after a restart or `durable rm`."""

from __future__ import annotations

import time
from typing import Any

_BATCH = 1000  # keys one DeleteObjects takes
# Keys failed for a reason that may pass (InternalError, SlowDown) are asked
# again after these waits; those refused outright are not.
_WAITS = (0.2, 1.0)
_FINAL = frozenset({"AccessDenied", "AllAccessDisabled", "InvalidAccessKeyId", "AccountProblem"})


class NotDeleted(Exception):
    """Keys S3 said it did not delete; `response` as botocore's errors hold
    it, so that the store's error text reads its code (`objecterrors.cause_text`)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"({code}) {message}")
        self.response = {"Error": {"Code": code, "Message": message}}


def delete_s3(fs: Any, paths: list[str]) -> None:
    """Delete paths (of one bucket) through the s3fs filesystem `fs`;
    `NotDeleted` unless S3 deleted every one (a missing key counts deleted)."""
    for start in range(0, len(paths), _BATCH):
        part = paths[start : start + _BATCH]
        for path in part:
            fs.invalidate_cache(path)
        bucket = fs.split_path(part[0])[0]
        keys = [fs.split_path(p)[1] for p in part]
        for wait in (*_WAITS, None):
            asked = {"Objects": [{"Key": k} for k in keys], "Quiet": True}
            out = fs.call_s3("delete_objects", Bucket=bucket, Delete=asked)
            failed = [e for e in out.get("Errors") or () if e.get("Code") != "NoSuchKey"]
            if not failed:
                break
            code = str(failed[0].get("Code"))
            if wait is None or code in _FINAL:
                what = f"{len(failed)} of {len(part)} objects were not deleted ({failed[0].get('Key')}"
                raise NotDeleted(code, f"{what}: {failed[0].get('Message')})")
            keys = [str(e.get("Key")) for e in failed]
            time.sleep(wait)
