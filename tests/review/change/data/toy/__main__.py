"""A small stand-in of the platform's graph for the change review's preview tests.

Layer components typed ``platform:layers:<Layer>``, resources under them labelled as the targets label theirs, and
the native target's resource type (``pulumi-python:dynamic/native:LocalService``), driven by its stack config:
``pulumi up`` with the defaults, then a change set (``toy:trinoMemory``, ``toy:pgDataDir``, ``toy:gate``,
``toy:spark``) and ``pulumi preview --json`` give an update, a replacement, a deletion and a creation.
"""

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult


class Provider(ResourceProvider):
    """Keeps its inputs; a new data directory is a replacement (as a data-holding service's would be)."""

    def create(self, props):
        return CreateResult(id_=props["name"], outs=props)

    def diff(self, _id, olds, news):
        changed = sorted(k for k in set(olds) | set(news) if k != "__provider" and olds.get(k) != news.get(k))
        return DiffResult(changes=bool(changed), replaces=[k for k in changed if k == "data_dir"],
                          delete_before_replace=True)

    def update(self, _id, _olds, news):
        return UpdateResult(outs=news)

    def delete(self, _id, _props):
        pass


class LocalService(Resource, module="native", name="LocalService"):
    def __init__(self, name, props, layer):
        super().__init__(Provider(), name, {"name": name, **props}, pulumi.ResourceOptions(parent=layer))


class Layer(pulumi.ComponentResource):
    def __init__(self, layer):
        super().__init__(f"platform:layers:{layer.title()}", f"lakehouse-{layer}")
        self.register_outputs({})


def labels(layer, owner, service):
    return {"lakehouse.platform": "lakehouse", "lakehouse.layer": layer, "lakehouse.owner": owner,
            "lakehouse.service": service}


config = pulumi.Config("toy")
layers = {name: Layer(name) for name in ("catalog", "compute", "governance")}
LocalService("trino", {"memory": config.get("trinoMemory") or "2GiB",
                       "labels": labels("compute", "analytics engineering", "trino")}, layers["compute"])
LocalService("postgres", {"data_dir": config.get("pgDataDir") or "/var/lib/postgresql/15",
                          "labels": labels("catalog", "platform", "postgres")}, layers["catalog"])
if config.get_bool("gate") is not False:
    LocalService("catalog-gate", {"grants": "reader=read",
                                  "labels": labels("governance", "security, executed by platform", "catalog-gate")},
                 layers["governance"])
if config.get_bool("spark"):
    LocalService("spark", {"labels": labels("compute", "analytics engineering", "spark")}, layers["compute"])
