"""The cloud graph's resources, created for real in an AWS emulator from the inputs the program rendered.

The program runs under Pulumi mocks (tests/support/harness.py) and records every resource's inputs; here the
ones the project's own AWS calls stand on are created with boto3, input by input: the IAM roles and
their inline policies, the KMS key and alias, the buckets (versioning, SSE-KMS, public access block,
ownership, lifecycle, policy), the log groups, the VPC with its subnets and security groups (and the
rules between them), the ECR repositories with their lifecycle policies, the ECS clusters and task definitions.

Under mocks a resource's id is ``<logical name>-id`` and its ARN ``arn:aws:<service>:<region>:<account>:
<logical name>``; AWS (here, the emulator) gives real ones. Every id and ARN a created resource gets is
recorded against its mock counterpart, and ``real`` rewrites any rendered value (a policy document, a
container definition, a stack output, a CD command line) to name the real ones. An input this module
does not know raises: a new rendered field is translated here, never dropped silently.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from tests.support.harness import ACCOUNT, ProgramRun, Registered

MOCK_REGION = "eu-west-1"  # what the mocks' getRegion answers (tests/support/harness.py)


def _int(value: Any) -> int:
    return int(value)  # Pulumi's wire format carries numbers as floats (8181.0)


def _tags(tags: Mapping[str, str] | None) -> dict[str, str]:
    return dict(tags or {})


def _check_keys(resource: Registered, known: Iterable[str]) -> None:
    unknown = {k for k in resource.inputs if not k.startswith("__")} - set(known)
    if unknown:
        raise AssertionError(f"{resource.type} {resource.name}: inputs {sorted(unknown)} are not translated to the "
                             "AWS API here (tests/support/rendered_in_moto.py)")


class InMoto:
    """Creates rendered resources through boto3 clients and maps mock ids and ARNs to the real ones."""

    def __init__(self, run: ProgramRun, session: Any, region: str) -> None:
        self.run = run
        self.region = region
        self.session = session
        self._real: dict[str, str] = {}
        self._pattern: re.Pattern[str] | None = None
        self._bucket_region: dict[str, str] = {}  # mock bucket id -> its region
        self.created: dict[str, list[str]] = {}  # type token -> logical names created
        self._clients: dict[tuple[str, str], Any] = {}

    # -- ids ------------------------------------------------------------------------------------

    def client(self, service: str, region: str | None = None) -> Any:
        key = (service, region or self.region)
        if key not in self._clients:
            self._clients[key] = self.session.client(service, region_name=key[1])
        return self._clients[key]

    def map(self, mock: str, real: str) -> None:
        """Record that the rendered ``mock`` id or ARN is ``real`` in the emulator."""
        if self._real.get(mock, real) != real:
            raise AssertionError(f"{mock} already stands for {self._real[mock]}, not {real}")
        self._real[mock] = real
        self._pattern = None

    def _mapped(self, resource: Registered, id_: str, arn: str | None) -> None:
        self.map(f"{resource.name}-id", id_)
        service = resource.type.split(":")[1].split("/")[0]
        if arn is not None:
            self.map(f"arn:aws:{service}:{MOCK_REGION}:{ACCOUNT}:{resource.name}", arn)
        self.created.setdefault(resource.type, []).append(resource.name)

    def id_of(self, logical: str) -> str:
        """The real id of the created resource named ``logical`` in the program."""
        return self._real[f"{logical}-id"]

    def arn_of(self, service: str, logical: str) -> str:
        """The real ARN of the created resource named ``logical`` (its mock ARN's service part: ``ecs``, ``kms``)."""
        return self._real[f"arn:aws:{service}:{MOCK_REGION}:{ACCOUNT}:{logical}"]

    def real(self, value: Any) -> Any:
        """``value`` with every mock id and ARN of a created resource replaced by the real one."""
        if isinstance(value, str):
            if self._pattern is None:
                tokens = sorted(self._real, key=len, reverse=True)
                self._pattern = re.compile("|".join(re.escape(t) for t in tokens) + r"(?![A-Za-z0-9_-])"
                                           if tokens else r"(?!x)x")
            return self._pattern.sub(lambda m: self._real[m.group(0)], value)
        if isinstance(value, list):
            return [self.real(v) for v in value]
        if isinstance(value, dict):
            return {k: self.real(v) for k, v in value.items()}
        return value

    def of_type(self, token: str) -> list[Registered]:
        return self.run.of_type(token)

    # -- identity and keys ------------------------------------------------------------------------

    def roles(self) -> None:
        """Every IAM role (trust policy, description, tags), then every inline policy (IAM validates it)."""
        iam = self.client("iam")
        for role in self.of_type("aws:iam/role:Role"):
            _check_keys(role, ("assumeRolePolicy", "description", "tags", "maxSessionDuration", "name"))
            created = iam.create_role(
                RoleName=role.inputs.get("name") or role.name, Description=role.inputs.get("description", ""),
                AssumeRolePolicyDocument=self.real(role.inputs["assumeRolePolicy"]),
                MaxSessionDuration=_int(role.inputs.get("maxSessionDuration", 3600)),
                Tags=[{"Key": k, "Value": v} for k, v in _tags(role.inputs.get("tags")).items()])["Role"]
            self._mapped(role, created["RoleName"], created["Arn"])

    def role_policies(self) -> None:
        iam = self.client("iam")
        for policy in self.of_type("aws:iam/rolePolicy:RolePolicy"):
            _check_keys(policy, ("policy", "role", "name"))
            iam.put_role_policy(RoleName=self.real(policy.inputs["role"]), PolicyName=policy.name,
                                PolicyDocument=self.real(policy.inputs["policy"]))
            self.created.setdefault(policy.type, []).append(policy.name)

    def key(self) -> None:
        """The platform's KMS key with its rendered key policy and rotation, and its alias."""
        kms = self.client("kms")
        for key in self.of_type("aws:kms/key:Key"):
            _check_keys(key, ("description", "policy", "enableKeyRotation", "deletionWindowInDays", "tags"))
            meta = kms.create_key(Description=key.inputs.get("description", ""), Policy=self.real(key.inputs["policy"]),
                                  Tags=[{"TagKey": k, "TagValue": v}
                                        for k, v in _tags(key.inputs.get("tags")).items()])["KeyMetadata"]
            if key.inputs.get("enableKeyRotation"):
                kms.enable_key_rotation(KeyId=meta["KeyId"])
            self._mapped(key, meta["KeyId"], meta["Arn"])
            self.map(f"{key.name}-key-id", meta["KeyId"])
        for alias in self.of_type("aws:kms/alias:Alias"):
            _check_keys(alias, ("name", "targetKeyId"))
            kms.create_alias(AliasName=alias.inputs["name"], TargetKeyId=self.real(alias.inputs["targetKeyId"]))
            self.created.setdefault(alias.type, []).append(alias.name)

    # -- storage ----------------------------------------------------------------------------------

    def buckets(self, *, policies: bool) -> None:
        """Every bucket with its rendered configuration; its policy only with ``policies`` (see the tests)."""
        for bucket in self.of_type("aws:s3/bucket:Bucket"):
            _check_keys(bucket, ("bucket", "forceDestroy", "tags", "region"))
            region = bucket.inputs.get("region") or self.region
            s3 = self.client("s3", region)
            name = bucket.inputs["bucket"]
            s3.create_bucket(Bucket=name, **({} if region == "us-east-1" else
                                             {"CreateBucketConfiguration": {"LocationConstraint": region}}))
            s3.put_bucket_tagging(Bucket=name, Tagging={"TagSet": [{"Key": k, "Value": v}
                                                                   for k, v in _tags(bucket.inputs.get("tags")).items()]})
            self._mapped(bucket, name, f"arn:aws:s3:::{name}")
            self._bucket_region[f"{bucket.name}-id"] = region
        handlers = {
            "aws:s3/bucketVersioning:BucketVersioning": self._versioning,
            "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": self._encryption,
            "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": self._public_access_block,
            "aws:s3/bucketOwnershipControls:BucketOwnershipControls": self._ownership,
            "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": self._lifecycle,
        }
        if policies:
            handlers["aws:s3/bucketPolicy:BucketPolicy"] = self.bucket_policy
        for token, handler in handlers.items():
            for resource in self.of_type(token):
                handler(resource)
                self.created.setdefault(token, []).append(resource.name)

    def _s3_of(self, resource: Registered) -> tuple[Any, str]:
        return self.client("s3", self._bucket_region[resource.inputs["bucket"]]), self.real(resource.inputs["bucket"])

    def _versioning(self, resource: Registered) -> None:
        _check_keys(resource, ("bucket", "versioningConfiguration", "region"))
        s3, name = self._s3_of(resource)
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={
            "Status": resource.inputs["versioningConfiguration"]["status"]})

    def _encryption(self, resource: Registered) -> None:
        _check_keys(resource, ("bucket", "rules", "region"))
        s3, name = self._s3_of(resource)
        rules = []
        for rule in resource.inputs["rules"]:
            default = rule["applyServerSideEncryptionByDefault"]
            rules.append({"ApplyServerSideEncryptionByDefault": {
                "SSEAlgorithm": default["sseAlgorithm"],
                **({"KMSMasterKeyID": self.real(default["kmsMasterKeyId"])} if default.get("kmsMasterKeyId") else {})},
                "BucketKeyEnabled": bool(rule.get("bucketKeyEnabled"))})
        s3.put_bucket_encryption(Bucket=name, ServerSideEncryptionConfiguration={"Rules": rules})

    def _public_access_block(self, resource: Registered) -> None:
        _check_keys(resource, ("bucket", "blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls",
                               "restrictPublicBuckets", "region"))
        s3, name = self._s3_of(resource)
        s3.put_public_access_block(Bucket=name, PublicAccessBlockConfiguration={
            "BlockPublicAcls": resource.inputs["blockPublicAcls"], "IgnorePublicAcls": resource.inputs["ignorePublicAcls"],
            "BlockPublicPolicy": resource.inputs["blockPublicPolicy"],
            "RestrictPublicBuckets": resource.inputs["restrictPublicBuckets"]})

    def _ownership(self, resource: Registered) -> None:
        _check_keys(resource, ("bucket", "rule", "region"))
        s3, name = self._s3_of(resource)
        s3.put_bucket_ownership_controls(Bucket=name, OwnershipControls={
            "Rules": [{"ObjectOwnership": resource.inputs["rule"]["objectOwnership"]}]})

    def _lifecycle(self, resource: Registered) -> None:
        _check_keys(resource, ("bucket", "rules", "region"))
        s3, name = self._s3_of(resource)
        rules = []
        for rule in resource.inputs["rules"]:
            out: dict[str, Any] = {"ID": rule["id"], "Status": rule["status"],
                                   "Filter": {"Prefix": rule["filter"].get("prefix", "")}}
            if "abortIncompleteMultipartUpload" in rule:
                out["AbortIncompleteMultipartUpload"] = {
                    "DaysAfterInitiation": _int(rule["abortIncompleteMultipartUpload"]["daysAfterInitiation"])}
            if "noncurrentVersionExpiration" in rule:
                out["NoncurrentVersionExpiration"] = {
                    "NoncurrentDays": _int(rule["noncurrentVersionExpiration"]["noncurrentDays"])}
            if "expiration" in rule:
                raise AssertionError(f"{resource.name}: a rule expires current objects (storage forbids it)")
            rules.append(out)
        s3.put_bucket_lifecycle_configuration(Bucket=name, LifecycleConfiguration={"Rules": rules})

    def bucket_policy(self, resource: Registered) -> None:
        _check_keys(resource, ("bucket", "policy", "region"))
        s3, name = self._s3_of(resource)
        s3.put_bucket_policy(Bucket=name, Policy=self.real(resource.inputs["policy"]))

    def log_groups(self) -> None:
        logs = self.client("logs")
        for group in self.of_type("aws:cloudwatch/logGroup:LogGroup"):
            _check_keys(group, ("name", "kmsKeyId", "retentionInDays", "tags"))
            name = group.inputs["name"]
            logs.create_log_group(logGroupName=name, kmsKeyId=self.real(group.inputs["kmsKeyId"]),
                                  tags=_tags(group.inputs.get("tags")))
            logs.put_retention_policy(logGroupName=name, retentionInDays=_int(group.inputs["retentionInDays"]))
            self._mapped(group, name, None)

    # -- network ----------------------------------------------------------------------------------

    def network(self) -> None:
        """The VPC, every subnet in its zone, every security group and the rules between them.

        Like the provider, a new security group loses EC2's default allow-all egress: its egress is
        exactly the rendered egress rules.
        """
        ec2 = self.client("ec2")
        for vpc in self.of_type("aws:ec2/vpc:Vpc"):
            _check_keys(vpc, ("cidrBlock", "enableDnsHostnames", "enableDnsSupport", "tags"))
            created = ec2.create_vpc(CidrBlock=vpc.inputs["cidrBlock"], TagSpecifications=self._ec2_tags("vpc", vpc))
            vpc_id = created["Vpc"]["VpcId"]
            for attribute in ("enableDnsSupport", "enableDnsHostnames"):
                if attribute in vpc.inputs:
                    key = attribute[0].upper() + attribute[1:]
                    ec2.modify_vpc_attribute(VpcId=vpc_id, **{key: {"Value": bool(vpc.inputs[attribute])}})
            self._mapped(vpc, vpc_id, None)
        for subnet in self.of_type("aws:ec2/subnet:Subnet"):
            _check_keys(subnet, ("vpcId", "cidrBlock", "availabilityZone", "mapPublicIpOnLaunch", "tags"))
            created = ec2.create_subnet(VpcId=self.real(subnet.inputs["vpcId"]), CidrBlock=subnet.inputs["cidrBlock"],
                                        AvailabilityZone=subnet.inputs["availabilityZone"],
                                        TagSpecifications=self._ec2_tags("subnet", subnet))["Subnet"]
            self._mapped(subnet, created["SubnetId"], created.get("SubnetArn"))
        for group in self.of_type("aws:ec2/securityGroup:SecurityGroup"):
            _check_keys(group, ("vpcId", "description", "tags", "name"))
            created = ec2.create_security_group(GroupName=group.inputs.get("name") or group.name,
                                                Description=group.inputs["description"],
                                                VpcId=self.real(group.inputs["vpcId"]),
                                                TagSpecifications=self._ec2_tags("security-group", group))
            group_id = created["GroupId"]
            ec2.revoke_security_group_egress(GroupId=group_id, IpPermissions=[
                {"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}])
            self._mapped(group, group_id, None)
        for token, authorize in (("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
                                  ec2.authorize_security_group_ingress),
                                 ("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
                                  ec2.authorize_security_group_egress)):
            for rule in self.of_type(token):
                _check_keys(rule, ("securityGroupId", "ipProtocol", "fromPort", "toPort", "referencedSecurityGroupId",
                                   "cidrIpv4", "description", "tags"))
                permission: dict[str, Any] = {"IpProtocol": rule.inputs["ipProtocol"]}
                if rule.inputs["ipProtocol"] != "-1":
                    permission.update(FromPort=_int(rule.inputs["fromPort"]), ToPort=_int(rule.inputs["toPort"]))
                description = rule.inputs.get("description", "")
                if rule.inputs.get("referencedSecurityGroupId"):
                    permission["UserIdGroupPairs"] = [{"GroupId": self.real(rule.inputs["referencedSecurityGroupId"]),
                                                       "Description": description}]
                else:
                    permission["IpRanges"] = [{"CidrIp": rule.inputs["cidrIpv4"], "Description": description}]
                authorize(GroupId=self.real(rule.inputs["securityGroupId"]), IpPermissions=[permission])
                self.created.setdefault(token, []).append(rule.name)

    @staticmethod
    def _ec2_tags(kind: str, resource: Registered) -> list[dict[str, Any]]:
        return [{"ResourceType": kind,
                 "Tags": [{"Key": k, "Value": v} for k, v in _tags(resource.inputs.get("tags")).items()]}]

    # -- containers -------------------------------------------------------------------------------

    def clusters(self) -> None:
        ecs = self.client("ecs")
        for cluster in self.of_type("aws:ecs/cluster:Cluster"):
            _check_keys(cluster, ("name", "settings", "tags"))
            created = ecs.create_cluster(
                clusterName=cluster.inputs["name"], settings=cluster.inputs.get("settings", []),
                tags=[{"key": k, "value": v} for k, v in _tags(cluster.inputs.get("tags")).items()])["cluster"]
            self._mapped(cluster, created["clusterArn"], created["clusterArn"])

    def task_definitions(self) -> None:
        """Every task definition: its container definitions JSON as rendered, with real ARNs in it."""
        ecs = self.client("ecs")
        for task in self.of_type("aws:ecs/taskDefinition:TaskDefinition"):
            _check_keys(task, ("family", "containerDefinitions", "cpu", "memory", "networkMode",
                               "requiresCompatibilities", "executionRoleArn", "taskRoleArn", "runtimePlatform", "tags"))
            inputs = self.real({k: v for k, v in task.inputs.items() if not k.startswith("__")})
            optional = {k: inputs[k] for k in ("executionRoleArn", "taskRoleArn", "runtimePlatform") if k in inputs}
            created = ecs.register_task_definition(
                family=inputs["family"], containerDefinitions=json.loads(inputs["containerDefinitions"]),
                cpu=inputs["cpu"], memory=inputs["memory"], networkMode=inputs["networkMode"],
                requiresCompatibilities=inputs["requiresCompatibilities"],
                tags=[{"key": k, "value": v} for k, v in _tags(inputs.get("tags")).items()], **optional,
            )["taskDefinition"]
            self._mapped(task, created["taskDefinitionArn"], created["taskDefinitionArn"])

    # -- images -----------------------------------------------------------------------------------

    def repositories(self) -> None:
        """Every ECR repository with its rendered settings, and its lifecycle policy."""
        ecr = self.client("ecr")
        for repository in self.of_type("aws:ecr/repository:Repository"):
            _check_keys(repository, ("name", "imageTagMutability", "imageScanningConfiguration",
                                     "encryptionConfigurations", "forceDelete", "tags"))
            (encryption,) = repository.inputs["encryptionConfigurations"]
            created = ecr.create_repository(
                repositoryName=repository.inputs["name"], imageTagMutability=repository.inputs["imageTagMutability"],
                imageScanningConfiguration={"scanOnPush": repository.inputs["imageScanningConfiguration"]["scanOnPush"]},
                encryptionConfiguration={"encryptionType": encryption["encryptionType"],
                                         "kmsKey": self.real(encryption["kmsKey"])},
                tags=[{"Key": k, "Value": v} for k, v in _tags(repository.inputs.get("tags")).items()])["repository"]
            self._mapped(repository, created["repositoryName"], created["repositoryArn"])
        for policy in self.of_type("aws:ecr/lifecyclePolicy:LifecyclePolicy"):
            _check_keys(policy, ("repository", "policy"))
            ecr.put_lifecycle_policy(repositoryName=self.real(policy.inputs["repository"]),
                                     lifecyclePolicyText=policy.inputs["policy"])
            self.created.setdefault(policy.type, []).append(policy.name)

    def everything(self, *, bucket_policies: bool) -> InMoto:
        """All of the above, in the order their references need."""
        self.roles()
        self.key()
        self.buckets(policies=bucket_policies)
        self.log_groups()
        self.role_policies()
        self.network()
        self.repositories()
        self.clusters()
        self.task_definitions()
        return self
