"""Flink on aws: the streaming job as an Amazon Managed Service for Apache Flink application."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from infra.services import profiles
from infra.services.context import ServiceContext, Side
from infra.services.flink.config import job_args, job_source
from infra.services.placeholders import SECRET_TOKEN

#: MSK with IAM authentication, as a Kafka consumer sets it (aws-msk-iam-auth is in the application jar).
MSK_IAM_CONSUMER = {
    "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "AWS_MSK_IAM",
    "kafka.sasl.jaas.config": "software.amazon.msk.auth.iam.IAMLoginModule required;",
    "kafka.sasl.client.callback.handler.class": "software.amazon.msk.auth.iam.IAMClientCallbackHandler",
}


def msf_properties(ctx: ServiceContext, secret_arns: dict[str, Any], kafka: Any = None) -> dict[str, Any]:
    """The job's arguments as the application's runtime properties (group ``lakehouse.job``).

    The same arguments as on docker and native, less the state directory (the service keeps checkpoints
    and snapshots itself). A catalog property holding a secret names its Secrets Manager ARN instead
    (``--catalog-secret.<property>``: the job reads it when it starts); values may be Outputs.
    """
    import pulumi

    args = job_args(ctx, Side.INTERNAL, kafka="{kafka}" if kafka is not None else None)
    props: dict[str, Any] = {}
    client = profiles.client_secrets(ctx.spec)
    for key, value in zip(args[::2], args[1::2], strict=True):
        name = key.removeprefix("--")
        if name.startswith("catalog-env."):
            prop = name.removeprefix("catalog-env.")
            template = client[prop]
            names = SECRET_TOKEN.findall(template)
            arns = [pulumi.Output.from_input(secret_arns[n]) for n in names]
            props[f"catalog-secret.{prop}"] = pulumi.Output.all(*arns).apply(_filler(template, names))
        elif value == "{kafka}":
            props[name] = kafka
        else:
            props[name] = value
    if job_source(ctx.spec) == "kafka":
        props.update(MSK_IAM_CONSUMER)
    return props


def _filler(template: str, names: list[str]) -> Callable[[list[str]], str]:
    """``template`` with each secret placeholder as ``{secretsmanager:<its ARN>}``, once the ARNs resolve."""

    def fill(arns: list[str]) -> str:
        table = dict(zip(names, arns, strict=True))
        return SECRET_TOKEN.sub(lambda m: "{secretsmanager:" + table[m.group(1)] + "}", template)

    return fill


MSF_PROPERTY_GROUP = "lakehouse.job"  # the job reads its arguments from this group (OrdersToIceberg)
