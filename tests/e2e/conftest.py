"""What the e2e tests share: one clone of the previous release (its venv made once) for every test that starts
from it (the previous-release takeover, the upgrade with data in flight)."""

from __future__ import annotations

import pytest

from tests.support.checkouts import Checkout, previous_release_ref


@pytest.fixture(scope="session")
def previous_release(tmp_path_factory: pytest.TempPathFactory) -> Checkout:
    """The previous release cloned, with its own venv and Pulumi CLI (timed in ``timings``). A test that needs
    another environment for it uses ``dataclasses.replace(previous_release, env=...)``."""
    return Checkout.clone(previous_release_ref(), tmp_path_factory.mktemp("previous-release") / "checkout")
