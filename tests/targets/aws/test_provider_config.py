"""Every ``aws:`` key of the cloud stack reaches the explicit AWS provider the program uses (under Pulumi mocks).

Before, ``AwsTarget.build`` created ``aws.Provider(region, default_tags)`` alone: ``aws:assumeRoles``,
``aws:profile``, ``aws:endpoints`` and the rest never reached it, so a CD pipeline assuming a deployment role
would have deployed as the runner's own identity.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest

from tests.support.harness import CLOUD_SECRETS, SECRET_KEY, SECRET_SIG, ProgramRun, RecordingMocks, run_program
from tests.support.stacks import stack_platform

ROLE = {"roleArn": "arn:aws:iam::123456789012:role/lakehouse-deploy", "sessionName": "cd-pipeline",
        "externalId": "lakehouse"}
STACK_AWS = {
    "aws:assumeRoles": json.dumps([ROLE]),
    "aws:endpoints": json.dumps([{"s3": "http://127.0.0.1:9000", "sts": "http://127.0.0.1:9001"}]),
    "aws:profile": "platform-deploy",
    "aws:allowedAccountIds": json.dumps(["123456789012"]),
    "aws:s3UsePathStyle": "true",
    "aws:skipCredentialsValidation": "true",
    "aws:skipRequestingAccountId": "true",
    "aws:maxRetries": "7",
    "aws:defaultTags": json.dumps({"tags": {"cost-center": "data-platform"}}),
    "aws:region": "eu-west-1",
}


def provider(run: ProgramRun) -> dict[str, Any]:
    (found,) = [r for r in run.resources if r.type == "pulumi:providers:aws"]
    return found.inputs


def plain(value: Any) -> Any:
    """A provider input as the provider reads it: secrets unwrapped, what is not a string JSON-decoded."""
    if isinstance(value, dict) and value.get(SECRET_KEY) == SECRET_SIG:
        value = value["value"]
    try:
        return json.loads(value)  # lists, objects, booleans and numbers travel as JSON text
    except (TypeError, ValueError):
        return value


#: OIDC in CD: the web identity token (or static keys) set with `pulumi config set --secret`.
WEB_IDENTITY = {"roleArn": ROLE["roleArn"], "webIdentityToken": "eyJhbGciOi.token"}


def run_with(aws_config: dict[str, str], secret: tuple[str, ...] = (), mocks: RecordingMocks | None = None
             ) -> ProgramRun:
    return run_program("cloud", stack_platform("cloud"), extra_config={**CLOUD_SECRETS, **aws_config},
                       secret_keys=[*CLOUD_SECRETS, *secret], mocks=mocks)


@pytest.fixture(scope="module")
def configured() -> ProgramRun:
    """The cloud stack with every kind of aws: key set, the web identity one as a secret (one evaluation)."""
    return run_with({**STACK_AWS, "aws:assumeRoleWithWebIdentity": json.dumps(WEB_IDENTITY)},
                    secret=("aws:assumeRoleWithWebIdentity",))


def test_every_aws_key_of_the_stack_reaches_the_provider(configured: ProgramRun) -> None:
    inputs = provider(configured)
    assert plain(inputs["assumeRoles"]) == [ROLE]
    assert plain(inputs["endpoints"]) == [{"s3": "http://127.0.0.1:9000", "sts": "http://127.0.0.1:9001"}]
    assert inputs["profile"] == "platform-deploy"
    assert plain(inputs["allowedAccountIds"]) == ["123456789012"]
    assert plain(inputs["s3UsePathStyle"]) is True
    assert plain(inputs["skipCredentialsValidation"]) is True
    assert plain(inputs["skipRequestingAccountId"]) is True
    assert plain(inputs["maxRetries"]) == 7
    assert inputs["region"] == "eu-west-1"
    # The stack's default tags and the platform's own, together.
    assert plain(inputs["defaultTags"]) == {"tags": {"cost-center": "data-platform", "lakehouse.platform": "lakehouse",
                                                     "lakehouse.stack": "cloud"}}


def test_without_aws_keys_the_provider_has_the_specs_region_and_the_platform_tags(cloud: ProgramRun) -> None:
    inputs = provider(cloud)  # the stack as it is: CLOUD_SECRETS and no aws: key
    assert inputs["region"] == "eu-west-1" and "assumeRoles" not in inputs and "profile" not in inputs
    assert plain(inputs["defaultTags"]) == {"tags": {"lakehouse.platform": "lakehouse", "lakehouse.stack": "cloud"}}


def test_a_secret_aws_key_stays_secret(configured: ProgramRun) -> None:
    """OIDC in CD: the web identity token (or static keys) set with `pulumi config set --secret`."""
    inputs = provider(configured)
    wrapped = inputs["assumeRoleWithWebIdentity"]
    assert isinstance(wrapped, dict) and wrapped[SECRET_KEY] == SECRET_SIG
    assert plain(wrapped) == WEB_IDENTITY
    assert not isinstance(inputs["profile"], dict), "only the key set as a secret is one"


@pytest.mark.parametrize(("config", "message"), [
    ({"aws:assumeRole": json.dumps({"roleArn": ROLE["roleArn"]})},
     "aws:assumeRole: unknown key of the AWS provider; allowed: accessKey, allowedAccountIds, "
     "assumeRoleWithWebIdentity, assumeRoles, customCaBundle, defaultTags, ec2MetadataServiceEndpoint, "
     "ec2MetadataServiceEndpointMode, endpoints, forbiddenAccountIds, httpProxy, httpsProxy, ignoreTags, insecure, "
     "maxRetries, noProxy, profile, region, retryMode, s3UsEast1RegionalEndpoint, s3UsePathStyle, secretKey, "
     "sharedConfigFiles, sharedCredentialsFiles, skipCredentialsValidation, skipMetadataApiCheck, "
     "skipRegionValidation, skipRequestingAccountId, stsRegion, tagPolicyCompliance, token, "
     "tokenBucketRateLimiterCapacity, useDualstackEndpoint, useFipsEndpoint, userAgents"),
    ({"aws:assumeRoles": json.dumps([{"role_arn": ROLE["roleArn"]}])},
     "aws:assumeRoles[0].role_arn: unknown key; allowed: duration, externalId, policy, policyArns, roleArn, "
     "sessionName, sourceIdentity, tags, transitiveTagKeys"),
    ({"aws:assumeRoles": json.dumps({"roleArn": ROLE["roleArn"]})},
     f"aws:assumeRoles: {{'roleArn': '{ROLE['roleArn']}'}} is not a list"),
    ({"aws:s3UsePathStyle": "yes"}, "aws:s3UsePathStyle: 'yes' is not allowed; use true or false"),
    ({"aws:region": "us-east-1"},
     "aws:region: 'us-east-1' differs from lakehouse:platform.aws.region 'eu-west-1', which places every resource "
     "of the platform; remove aws:region or make the two equal"),
    ({"aws:defaultTags": json.dumps({"tags": {"lakehouse.stack": "prod"}})},
     "aws:defaultTags.tags: lakehouse.stack are the platform's own default tags; leave them to the program"),
])
def test_an_aws_key_the_provider_would_not_take_stops_the_run_naming_it(config: dict[str, str], message: str) -> None:
    mocks = RecordingMocks()
    with pytest.raises(pulumi.RunError) as info:
        run_with(config, mocks=mocks)
    assert str(info.value) == f"invalid aws provider config in the stack:\n  - {message}"
    assert mocks.resources == []  # refused before any resource
