"""Kafka on aws: Amazon MSK (IAM authentication, TLS, KMS), with the platform's topics (``aws.kafka_msk``).

MSK never auto-creates topics either: the platform's topics are ``aws.msk.Topic`` resources, as every target
creates them. Connect is MSK Connect (the kafka-connect package's aws part).
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws as aws

from lakehouse_platform.components.aws.common import log_group_name
from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.services.aws_parts import Foundation, PartComponent
from lakehouse_platform.services.kafka.config import KAFKA, platform_topics, retention_properties, topic_configs

LAYER = Layer.COMPUTE


def log_sources(spec: PlatformSpec) -> dict[str, str | None]:
    return {KAFKA: None}


class MskCluster(PartComponent):
    """The MSK cluster in the private subnets, its broker logs in their encrypted group, and the topics."""

    def __init__(self, foundation: Foundation) -> None:
        ctx, spec, gov = foundation.ctx, foundation.spec, foundation.gov
        super().__init__("platform:aws:MskCluster", f"{spec.name}-{KAFKA}", ctx, LAYER)
        network = gov.network
        # The broker's disk bounds, as on every target (streams.retention_*, segment_bytes).
        self.configuration = aws.msk.Configuration(
            f"{spec.name}-kafka", name=f"{spec.name}-{pulumi.get_stack()}-kafka",
            kafka_versions=[spec.aws.msk_kafka_version],
            server_properties="".join(f"{key}={value}\n" for key, value in retention_properties(spec).items()),
            opts=self.child_opts())
        self.cluster = aws.msk.Cluster(
            f"{spec.name}-kafka",
            cluster_name=f"{spec.name}-{pulumi.get_stack()}",
            kafka_version=spec.aws.msk_kafka_version,
            number_of_broker_nodes=spec.aws.msk_broker_count,
            broker_node_group_info={
                "instance_type": spec.aws.msk_instance_type,
                "client_subnets": network.private_subnet_ids,
                "security_groups": [network.sg("msk").id],
                "storage_info": {"ebs_storage_info": {"volume_size": 100}},
            },
            encryption_info={"encryption_at_rest_kms_key_arn": gov.key.arn,
                             "encryption_in_transit": {"client_broker": "TLS", "in_cluster": True}},
            client_authentication={"sasl": {"iam": True}, "unauthenticated": False},
            configuration_info={"arn": self.configuration.arn, "revision": self.configuration.latest_revision},
            logging_info={"broker_logs": {"cloudwatch_logs": {"enabled": True,
                                                              "log_group": log_group_name(spec, KAFKA)}}},
            tags=ctx.tags(LAYER, KAFKA),
            opts=self.child_opts(depends_on=[foundation.logs.group(KAFKA)]),
        )
        replication = min(3, spec.aws.msk_broker_count)
        self.topics = [
            aws.msk.Topic(f"{spec.name}-topic-{t.name.replace('.', '-')}", name=t.name, cluster_arn=self.cluster.arn,
                          partition_count=t.partitions, replication_factor=replication,
                          configs=json.dumps(topic_configs(t), sort_keys=True), opts=self.child_opts())
            for t in platform_topics(spec)
        ]
        self.register_outputs({"bootstrap_brokers": self.cluster.bootstrap_brokers_sasl_iam})

    @property
    def bootstrap_brokers(self) -> pulumi.Output[str]:
        return self.cluster.bootstrap_brokers_sasl_iam

    def layer_outputs(self) -> dict[str, Any]:
        return {"kafka_bootstrap_brokers": self.bootstrap_brokers, "connectors": {}}

    def stack_outputs(self) -> dict[str, Any]:
        return {"kafka_bootstrap_brokers": self.bootstrap_brokers, "connect_connectors": {}}


def build(foundation: Foundation) -> MskCluster:
    return MskCluster(foundation)
