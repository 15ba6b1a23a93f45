"""The S3 clients the tests make in this process read botocore's models
(S3's, the endpoints') once: each new session read them afresh, and the
tests open hundreds (`s3proxy.share_botocore_loader`, set up with the
moto server). Two clients as two processes' would have: one loader."""

from __future__ import annotations

import pytest
import s3fs

# On S3, as every test on moto's server: slow, and the fast suites of the
# other Pythons do not even import this module (nor s3fs for it).
pytestmark = pytest.mark.slow


def test_two_s3_clients_made_here_share_one_model_loader(s3_url: str) -> None:
    bucket = s3_url.removeprefix("s3://").split("/")[0]
    one, two = (s3fs.S3FileSystem(skip_instance_cache=True) for _ in range(2))
    assert one is not two and one.ls(bucket) == two.ls(bucket) == []
    assert one.session is not two.session
    assert one.session.get_component("data_loader") is two.session.get_component("data_loader")
