"""Flink offline: the rendered processes, the job's lineage, the FlinkJob provider's own logic, the launcher.

The provider's life against a real cluster (submit, adopt, stop-with-savepoint and resubmit, restore after
a lost job manager, destroy) is exercised by tests/e2e and the probes; here is what needs no cluster.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from lakehouse_platform.config import load_platform
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.flink import artifact as flink_artifact
from lakehouse_platform.services.flink import config as flink_config
from lakehouse_platform.services.flink import definition as flink
from lakehouse_platform.services.flink import job as fj
from tests.support import REPO_ROOT
from tests.support.harness import ProgramRun
from tests.support.stacks import stack_platform, with_changes

PY = sys.executable


def _files(resource) -> dict[str, str]:
    files = resource.inputs["files"]
    return files["value"] if isinstance(files, dict) and "value" in files else files


def test_native_managers_bind_loopback_on_pinned_ports_with_filesystem_checkpoints(native_run):
    for name, role in (("flink-jobmanager", "jobmanager"), ("flink-taskmanager", "taskmanager")):
        process = native_run.named(name)
        config = yaml.safe_load(next(v for k, v in _files(process).items() if k.endswith("/conf/config.yaml")))
        for key in ("jobmanager.bind-host", "taskmanager.bind-host", "rest.bind-address", "rest.address",
                    "jobmanager.rpc.address", "taskmanager.host"):
            assert config[key] == "127.0.0.1", (name, key)
        # Every port pinned: nothing left to Flink's random choice (0).
        assert config["jobmanager.rpc.port"] == 6123 and config["rest.port"] == 8081
        assert config["blob.server.port"] == "6124" and config["taskmanager.rpc.port"] == "6122"
        assert config["taskmanager.data.port"] == 6121
        assert config["metrics.internal.query-service.port"] == ("6125" if role == "jobmanager" else "6126")
        assert config["execution.checkpointing.storage"] == "filesystem"
        assert config["execution.checkpointing.dir"].endswith("/native/flink-jobmanager/state/checkpoints")
        assert config[f"{role}.memory.process.size"] == ("768m" if role == "jobmanager" else "1024m")
        assert sorted(process.inputs["ports"]) == sorted(p for p in (8081, 6123, 6124, 6125, 6122, 6121, 6126)
                                                         if (p in (8081, 6123, 6124, 6125)) == (role == "jobmanager"))
        argv = process.inputs["argv"]
        assert argv[1:3] == ["-m", "lakehouse_platform.runtime.bash_java_utils"]
        assert argv.count("{jvm-params}") == argv.count("{dynamic-params}") == 1
        assert flink_config.ENTRYPOINTS[role] in argv and "--add-opens=java.base/java.util=ALL-UNNAMED" in argv
    tm = native_run.named("flink-taskmanager")
    assert tm.inputs["health"] == {"kind": "tcp", "host": "127.0.0.1", "port": 6122}
    assert yaml.safe_load(next(v for k, v in _files(tm).items() if k.endswith("config.yaml")))[
        "taskmanager.memory.managed.fraction"] == 0.1


def test_native_managers_drain_the_job_with_code_the_stack_carries(native_run):
    """Before either manager stops for an update, the job is stopped with a savepoint into its lineage, by a module
    of the stack's own copy of the operations code (what a process may import: ADR 0016), not of a checkout."""
    import fnmatch

    from lakehouse_platform.targets.native.runtime import CODE_SET

    job = native_run.named("flink-orders-job")
    for name in ("flink-jobmanager", "flink-taskmanager"):
        process = native_run.named(name)
        [step] = process.inputs["pre_stop"]
        assert step[1:3] == ["-m", "lakehouse_platform.services.flink.runtime"], step
        assert step[3:6] == [job.inputs["rest_url"], job.inputs["job_name"], job.inputs["savepoint_dir"]]
        module = step[2].replace(".", "/") + ".py"
        assert any(fnmatch.fnmatch(module, pattern.replace("**/", "")) or fnmatch.fnmatch(module, pattern)
                   for pattern in CODE_SET), f"{module} is not in the stack's code ({CODE_SET})"


def test_native_job_runs_the_generator_without_kafka(native_run):
    job = native_run.named("flink-orders-job")
    args = dict(zip(job.inputs["program_args"][::2], job.inputs["program_args"][1::2], strict=True))
    assert args["--source"] == "generator" and args["--rows-per-second"] == "20"
    # Through the catalog's gate, with the writer identity's token from the managers' environment.
    assert args["--catalog-uri"] == "http://127.0.0.1:8182" and args["--s3-endpoint"] == "http://127.0.0.1:8333"
    assert args["--catalog-env.token"] == "LAKEHOUSE_CATALOG_TOKEN" and "--catalog.token" not in args
    assert args["--checkpoint-dir"] == job.inputs["checkpoint_dir"]
    assert job.inputs["rest_url"] == "http://127.0.0.1:8081"
    [(flink_side, local)] = job.inputs["host_paths"].items()
    assert flink_side == f"file://{local}" and local.endswith("/native/flink-jobmanager/state")  # natively the same
    assert job.inputs["checkpoint_dir"] == f"{flink_side}/checkpoints/{flink_config.lineage(load_platform(stack_platform('native')))}"
    assert job.inputs["savepoint_dir"].startswith(f"{flink_side}/savepoints/lakehouse-orders-stream-")
    argv = native_run.named("flink-jobmanager").inputs["argv"]
    classpath = argv[argv.index("-classpath") + 1].split(":")
    assert classpath[-2:] == ["/nonexistent/lakehouse-cache/flink-jobmanager/a.jar",
                              "/nonexistent/lakehouse-cache/flink-jobmanager/b.jar"]  # the artifact's, in its order


def test_the_lineage_follows_table_and_source_not_tuning():
    base = load_platform(stack_platform("native"))

    def lineage(**job):
        platform = stack_platform("native")
        platform["flink"] = {"job": {**platform["flink"]["job"], **job}}
        return flink_config.lineage(load_platform(platform))

    assert lineage() == flink_config.lineage(base)
    assert lineage(rows_per_second=50, checkpoint_interval_s=5) == flink_config.lineage(base)
    assert lineage(table="streams.other") != flink_config.lineage(base)
    assert lineage(source="generator") == flink_config.lineage(base)  # the native stack's own choice
    assert lineage(source="auto") != flink_config.lineage(base)  # auto reads the orders topic: Kafka is on natively
    lab_auto = stack_platform("lab")
    lab_auto["flink"] = {"job": {"source": "auto"}}
    lab = load_platform(lab_auto)
    assert flink_config.job_source(lab) == "kafka" and flink_config.lineage(lab) != flink_config.lineage(base)


def test_a_secret_catalog_credential_reaches_the_job_by_environment_never_in_its_arguments():
    platform = stack_platform("lab")
    platform["catalog"] = {"default": "polaris"}
    spec = load_platform(platform)
    args = flink_config.job_args(ServiceContext(spec, flink.JOB))
    assert "--catalog-env.credential" in args and "LAKEHOUSE_CATALOG_CREDENTIAL" in args
    assert not any("secret:" in a for a in args)
    env = flink_config.aws_env(spec)
    assert env["LAKEHOUSE_CATALOG_CREDENTIAL"] == "writer:${secret:polaris-client-secret-writer}"  # its own principal


def test_to_host_and_back():
    paths = {"file:///flink-state": "/var/lab/flink/state"}
    host = fj.to_host("file:/flink-state/checkpoints/x/abc/chk-3", paths)
    assert host == Path("/var/lab/flink/state/checkpoints/x/abc/chk-3")
    assert fj.to_flink(host, paths) == "file:///flink-state/checkpoints/x/abc/chk-3"
    assert fj.to_host("file:///elsewhere/chk-1", paths) is None


def test_latest_state_is_the_newest_complete_checkpoint_or_savepoint_of_the_lineage(tmp_path):
    paths = {f"file://{tmp_path}": str(tmp_path)}
    cp, sp = f"file://{tmp_path}/checkpoints/job-a", f"file://{tmp_path}/savepoints/job-a"
    assert fj.latest_state(cp, sp, paths) is None

    def metadata(path: Path, age_s: float) -> None:
        path.mkdir(parents=True)
        (path / "_metadata").write_bytes(b"x")
        os.utime(path / "_metadata", (time.time() - age_s, time.time() - age_s))

    metadata(tmp_path / "checkpoints/job-a/j1/chk-4", 30)
    metadata(tmp_path / "savepoints/job-a/savepoint-j1-1", 20)
    metadata(tmp_path / "checkpoints/job-b/j9/chk-9", 0)  # another lineage: never ours
    (tmp_path / "checkpoints/job-a/j2/chk-7").mkdir(parents=True)  # no _metadata: not finished
    assert fj.latest_state(cp, sp, paths) == f"file://{tmp_path}/savepoints/job-a/savepoint-j1-1"
    metadata(tmp_path / "checkpoints/job-a/j2/chk-8", 5)
    assert fj.latest_state(cp, sp, paths) == f"file://{tmp_path}/checkpoints/job-a/j2/chk-8"


def _props(**extra) -> dict:
    return {"rest_url": "http://127.0.0.1:9", "job_name": "j", "jar_path": "/x/orders.jar", "jar_digest": "a" * 64,
            "entry_class": "lakehouse.jobs.OrdersToIceberg", "program_args": ["--table", "s.t"],
            "checkpoint_dir": "file:///s/checkpoints/j", "savepoint_dir": "file:///s/savepoints/j", **extra}


def test_diff_resubmits_a_job_flink_lost_and_replaces_a_renamed_one():
    provider = fj.FlinkJobProvider()
    olds = {**_props(), "job_id": "abc", "state": "RUNNING"}
    # Port 9 answers nothing: the recorded job is gone for Flink, so `pulumi up` must act.
    assert provider.diff("j", olds, _props()).changes is True
    renamed = provider.diff("j", olds, _props(job_name="k"))
    assert renamed.replaces == ["job_name"]
    assert fj.JobInputs.from_props(_props()).jar_name == "orders-aaaaaaaaaaaa.jar"


def test_invalid_job_inputs_are_refused_by_key():
    with pytest.raises(fj.FlinkJobError, match="jar_digest"):
        fj.JobInputs.from_props(_props(jar_digest="nope"))
    failures = fj.FlinkJobProvider().check({}, _props(rest_url="ftp://x")).failures
    assert [f.property for f in failures] == ["rest_url"]


def test_serialized_job_provider_loads_by_reference_in_a_provider_process():
    from pulumi.dynamic.dynamic import serialize_provider

    blob = serialize_provider(fj.FlinkJobProvider())
    assert blob == serialize_provider(fj.FlinkJobProvider()), "deterministic, or every up shows a diff"
    code = ("import base64, sys, dill\n"
            "p = dill.loads(base64.b64decode(sys.stdin.read()))\n"
            f"print(type(p).__name__, p.diff('x', {json.dumps({**_props(), 'job_id': 'gone'})}, "
            f"{json.dumps(_props())}).changes)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([PY, "-c", code], input=blob, cwd="/", env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["FlinkJobProvider", "True"]
    assert str(REPO_ROOT).encode() not in base64.b64decode(blob), "no path of the checkout in the state"








def test_distribution_members_kept_are_the_lib_jars_and_the_utils_jar():
    top = "apache_flink_libraries-2.1.3/deps/"
    assert flink_artifact._wanted(top + "lib/flink-dist-2.1.3.jar", "2.1.3") == "lib/flink-dist-2.1.3.jar"
    assert flink_artifact._wanted(top + "lib/flink-cep-2.1.3.jar", "2.1.3") == "lib/flink-cep-2.1.3.jar"
    assert flink_artifact._wanted(top + "bin/bash-java-utils.jar", "2.1.3") == "bin/bash-java-utils.jar"
    for unused in ("lib/flink-scala_2.12-2.1.3.jar", "lib/flink-csv-2.1.3.jar", "opt/flink-python-2.1.3.jar",
                   "lib/log4j-layout-template-json-2.24.3.jar", "plugins/x/y.jar"):
        assert flink_artifact._wanted(top + unused, "2.1.3") is None, unused


# -- aws: Managed Service for Apache Flink, under mocks ----------------------------------------------------------

MSF_APP = "aws:kinesisanalyticsv2/application:Application"


def _msf(run):
    [app] = run.of_type(MSF_APP)
    config = app.inputs["applicationConfiguration"]
    [group] = config["environmentProperties"]["propertyGroups"]
    return app, config, group


def _role_policy(run, name: str) -> dict:
    [found] = [r for r in run.of_type("aws:iam/rolePolicy:RolePolicy") if r.name == name]
    policy = found.inputs["policy"]
    return json.loads(policy) if isinstance(policy, str) else policy


def test_aws_runs_the_same_job_on_managed_service_for_apache_flink(cloud_run):
    from tests.support.harness import fake_artifact

    app, config, group = _msf(cloud_run)
    assert app.inputs["runtimeEnvironment"] == "FLINK-1_20" and app.inputs["startApplication"] is True
    assert cloud_run.layer_of(app) == "lakehouse-compute"
    assert group["propertyGroupId"] == "lakehouse.job"  # where OrdersToIceberg reads its arguments on MSF
    props = group["propertyMap"]
    # The same arguments as on docker and native (internal addresses), less the state directory.
    spec = load_platform(stack_platform("cloud"))
    native_style = flink_config.job_args(ServiceContext(spec, flink.JOB))
    expected = dict(zip((k.removeprefix("--") for k in native_style[::2]), native_style[1::2], strict=True))
    expected.pop("catalog-env.credential")
    assert {k: v for k, v in props.items() if not k.startswith("catalog-secret.")} == expected
    assert props["catalog-uri"] == "http://polaris.lakehouse.internal:8181/api/catalog"
    assert props["catalog.header.X-Iceberg-Access-Delegation"] == "vended-credentials"
    assert props["source"] == "generator" and "checkpoint-dir" not in props and "s3-endpoint" not in props
    # The catalog credential is a Secrets Manager reference the job resolves when it starts, never the value.
    # As the writer identity's own Polaris principal, never as Polaris's root.
    assert props["catalog-secret.credential"] == ("writer:{secretsmanager:arn:aws:secretsmanager:eu-west-1:123456789012:"
                                                  "secret:lakehouse-polaris-client-secret-writer-AbCdEf}")
    assert "polaris-root-secret" not in json.dumps(app.inputs, default=str)
    checkpoints = config["flinkApplicationConfiguration"]["checkpointConfiguration"]
    assert checkpoints["checkpointInterval"] == 10_000 and checkpoints["checkpointingEnabled"] is True
    assert config["applicationSnapshotConfiguration"] == {"snapshotsEnabled": True}
    assert config["runConfiguration"]["applicationRestoreConfiguration"] == {
        "applicationRestoreType": "RESTORE_FROM_LATEST_SNAPSHOT"}
    assert config["vpcConfiguration"]["securityGroupIds"] == ["lakehouse-engines-id"]
    assert len(config["vpcConfiguration"]["subnetIds"]) == 2
    # Its code: the application jar from the artifact cache, uploaded to the private artifacts bucket.
    code = cloud_run.named("lakehouse-flink-application-jar")
    assert code.inputs["source"].path == str(fake_artifact("cloud-flink-jobmanager").path)
    assert config["applicationCodeConfiguration"]["codeContent"]["s3ContentLocation"]["fileKey"] == code.inputs["key"]
    assert code.inputs["serverSideEncryption"] == "aws:kms"


def test_aws_flink_role_has_no_rights_on_the_warehouse_only_its_own_things(cloud_run):
    statements = {s["Sid"]: s for s in _role_policy(cloud_run, "lakehouse-flink-application")["Statement"]}
    assert set(statements) == {"ReadApplicationCode", "DecryptApplicationCode", "WriteOwnLogs", "RunInTheVpc",
                               "ReadCatalogCredential", "DecryptCatalogCredential"}
    assert statements["ReadApplicationCode"]["Resource"].endswith("lakehouse-artifacts/flink/*")
    assert statements["ReadCatalogCredential"]["Resource"] == [
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:lakehouse-polaris-client-secret-writer-AbCdEf"]
    assert "warehouse" not in json.dumps(statements)  # table data only through vended credentials
    app, _, _ = _msf(cloud_run)
    assert app.inputs["cloudwatchLoggingOptions"]["logStreamArn"]
    assert cloud_run.outputs["version_manifest"]["flink-jobmanager"] == "1.20"
    assert cloud_run.outputs["version_manifest"]["iceberg in flink-jobmanager"] == "1.10.1"
    assert cloud_run.outputs["jobs"]["flink-orders-job"]["runtime"] == "FLINK-1_20"


def test_aws_kafka_source_without_msk_is_refused():
    platform = stack_platform("cloud")
    platform["flink"] = {"job": {"source": "kafka"}}
    from lakehouse_platform.config import ConfigError

    with pytest.raises(ConfigError) as info:
        load_platform(platform)
    assert info.value.errors == [
        "lakehouse:platform.flink.job.source: 'kafka' reads the orders topic, but on aws Kafka is Amazon MSK and "
        "aws.kafka_msk is false; set aws.kafka_msk: true, or use 'generator' or 'auto'"]



def test_flink_on_msf_reads_msk_with_iam_when_kafka_is_msk(streaming: ProgramRun) -> None:
    import json

    from lakehouse_platform.config import load_platform
    from lakehouse_platform.services.context import ServiceContext
    from lakehouse_platform.services.resolver import cloud_recipes

    run = streaming
    [app] = run.of_type("aws:kinesisanalyticsv2/application:Application")
    [group] = app.inputs["applicationConfiguration"]["environmentProperties"]["propertyGroups"]
    props = group["propertyMap"]
    assert props["source"] == "kafka" and props["kafka-topic"] == "orders"
    assert props["kafka-bootstrap"] == "b-1.lakehouse-kafka.kafka.eu-west-1.amazonaws.com:9098"
    assert props["kafka.sasl.mechanism"] == "AWS_MSK_IAM" and props["kafka.security.protocol"] == "SASL_SSL"
    [policy] = [r for r in run.of_type("aws:iam/rolePolicy:RolePolicy") if r.name == "lakehouse-flink-application"]
    statements = {s["Sid"]: s for s in json.loads(policy.inputs["policy"])["Statement"]}
    # Only its own topic and consumer group (MSK ARNs: .../cluster/<name>/<uuid> -> .../topic/<name>/<uuid>/<topic>).
    assert statements["KafkaTopic"]["Resource"].endswith("/orders")
    assert statements["KafkaGroup"]["Resource"].endswith("/lakehouse-flink")
    spec = load_platform(with_changes(kafka_msk=True))
    assert cloud_recipes(spec)["flink-jobmanager"].key(ServiceContext(spec, "flink-jobmanager")).endswith(":kafka")

def test_application_jar_merges_service_files_drops_signatures_and_is_reproducible(tmp_path):
    import zipfile

    from lakehouse_platform.artifacts import java

    def jar(name: str, entries: dict[str, str]) -> Path:
        path = tmp_path / name
        with zipfile.ZipFile(path, "w") as out:
            for entry, body in entries.items():
                out.writestr(entry, body)
        return path

    service = "META-INF/services/org.apache.flink.table.factories.Factory"
    a = jar("a.jar", {"a/A.class": "A1", service: "# licence\norg.a.Factory\n", "META-INF/MANIFEST.MF": "x",
                      "META-INF/SIGNER.SF": "sig", "shared.txt": "first"})
    b = jar("b.jar", {"b/B.class": "B1", service: "org.b.Factory\norg.a.Factory\n", "shared.txt": "second",
                      "META-INF/SIGNER.RSA": "sig", "module-info.class": "m"})
    out = java.application_jar([a, b], tmp_path / "app.jar", main_class="x.Main")
    with zipfile.ZipFile(out) as merged:
        names = set(merged.namelist())
        assert merged.read(service).decode().splitlines() == ["# licence", "org.a.Factory", "org.b.Factory"]
        assert merged.read("shared.txt") == b"first"
        assert "Main-Class: x.Main" in merged.read("META-INF/MANIFEST.MF").decode()
    assert {"a/A.class", "b/B.class"} <= names and not names & {"META-INF/SIGNER.SF", "META-INF/SIGNER.RSA",
                                                               "module-info.class"}
    first = out.read_bytes()
    assert java.application_jar([a, b], tmp_path / "again.jar", main_class="x.Main").read_bytes() == first


def test_every_native_health_check_records_as_given_so_a_second_up_changes_nothing(native_run):
    """LocalService records its health check with defaults filled in; a check missing one (a tcp check without
    its host) then differs from its input on every `pulumi up`, which restarts the service each time."""
    from pydantic import TypeAdapter

    from lakehouse_platform.targets.native import local_service as ls

    adapter = TypeAdapter(ls.HealthCheck)
    for process in native_run.of_type("pulumi-python:dynamic/native:LocalService"):
        health = process.inputs["health"]
        assert adapter.validate_python(health).model_dump(exclude_none=True) == health, process.name
