"""Pictures of a stack drawn from its model, so they stay true: SVG written here, no renderer to install.

Four, each a function of the validated spec (and the service registry):

- ``layers``: the seven layers, bottom (storage) to top (recovery), each with its owner and its enabled services;
- ``services``: what runs where on the stack's target: each service as a process, a container, or the managed
  service or ECS task aws uses instead;
- ``flows``: the data's paths: the bookshop's PostgreSQL through Debezium and Kafka to the Iceberg sink, the
  Flink job, the engines through the gate to the catalog, and the store every writer's files land in;
- ``governance``: the identities, every point where their grants are enforced, and who may read, write and
  manage each namespace.

``lakehouse review --stack <s> --format svg`` prints them as one document; ``make docs`` puts
them on the overview, targets and governance pages (``docs/hooks/reference.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from html import escape

from lakehouse_platform.model import Layer, PlatformSpec, Target
from lakehouse_platform.model.streams import DebeziumPostgresSpec, IcebergSinkSpec
from lakehouse_platform.review import grants
from lakehouse_platform.services.capabilities import BROKER, DATABASE, SQL_ENGINE, STORE, STREAMING_WRITER
from lakehouse_platform.services.catalogs import default_catalog
from lakehouse_platform.services.registry import registry

FONT = 12
CHAR_W = 7.0  # an average character of the 12px sans-serif, for box widths
LINE_H = 16
PAD = 8
#: One colour per layer, for the boxes of its services.
COLOURS = {Layer.STORAGE: "#e8f1fb", Layer.CATALOG: "#fdf1dc", Layer.COMPUTE: "#e6f5e9",
           Layer.GOVERNANCE: "#fbe4e6", Layer.ORCHESTRATION: "#efe7f8", Layer.OBSERVABILITY: "#e2f4f4",
           Layer.RECOVERY: "#f2f2f2"}
NEUTRAL = "#ffffff"
#: Wider than this, a layer's services wrap onto another line of its band.
MAX_WIDTH = 1100
#: The streaming job's source value that reads the orders topic (``flink.job.source``).
KAFKA_SOURCE = "kafka"  # not the service: a value of flink.job.source
#: Client libraries on the host the engines' profiles serve (not services of the stack).
HOST_ENGINES = ("Spark", "PyIceberg", "DuckDB")


@dataclass
class Box:
    """A rectangle with lines of text; ``key`` names it for arrows."""

    key: str
    lines: list[str]
    x: float = 0.0
    y: float = 0.0
    fill: str = NEUTRAL
    bold_first: bool = True
    w: float = 0.0
    h: float = 0.0

    def __post_init__(self) -> None:
        self.w = self.w or max(len(line) for line in self.lines) * CHAR_W + 2 * PAD
        self.h = self.h or len(self.lines) * LINE_H + 2 * PAD - 4


@dataclass
class Picture:
    """Boxes, arrows between them (by key) and a title: drawn by ``svg``."""

    title: str
    boxes: list[Box] = field(default_factory=list)
    arrows: list[tuple[str, str, str]] = field(default_factory=list)  # (from, to, label)
    notes: list[str] = field(default_factory=list)

    def box(self, key: str) -> Box:
        return next(b for b in self.boxes if b.key == key)


def _text(x: float, y: float, line: str, bold: bool = False, anchor: str = "start") -> str:
    weight = ' font-weight="bold"' if bold else ""
    return f'<text x="{x:.0f}" y="{y:.0f}" text-anchor="{anchor}"{weight}>{escape(line)}</text>'


def svg(picture: Picture) -> str:
    """The picture as a standalone SVG document (its size fitted to what it holds)."""
    width = max([b.x + b.w for b in picture.boxes] + [len(picture.title) * CHAR_W * 1.2]) + 2 * PAD
    bottom = max([b.y + b.h for b in picture.boxes] + [30])
    height = bottom + PAD + LINE_H * len(picture.notes) + (PAD if picture.notes else 0)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="sans-serif" font-size="{FONT}" role="img">',
           f"<title>{escape(picture.title)}</title>",
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
           f'<rect width="{width:.0f}" height="{height:.0f}" fill="#ffffff"/>',
           _text(PAD, 20, picture.title, bold=True)]
    for start, end, label in picture.arrows:
        a, b = picture.box(start), picture.box(end)
        if b.x >= a.x + a.w:  # left to right
            x1, y1, x2, y2 = a.x + a.w, a.y + a.h / 2, b.x, b.y + b.h / 2
        elif a.x >= b.x + b.w:
            x1, y1, x2, y2 = a.x, a.y + a.h / 2, b.x + b.w, b.y + b.h / 2
        else:  # one above the other
            x1, x2 = a.x + a.w / 2, b.x + b.w / 2
            y1, y2 = (a.y + a.h, b.y) if b.y > a.y else (a.y, b.y + b.h)
        out.append(f'<line x1="{x1:.0f}" y1="{y1:.0f}" x2="{x2:.0f}" y2="{y2:.0f}" stroke="#555" '
                   f'stroke-width="1.2" marker-end="url(#arrow)"/>')
        if label:
            out.append(_text((x1 + x2) / 2, (y1 + y2) / 2 - 4, label, anchor="middle"))
    for b in picture.boxes:
        out.append(f'<rect x="{b.x:.0f}" y="{b.y:.0f}" width="{b.w:.0f}" height="{b.h:.0f}" rx="5" '
                   f'fill="{b.fill}" stroke="#777"/>')
        for index, line in enumerate(b.lines):
            out.append(_text(b.x + PAD, b.y + PAD + 8 + index * LINE_H, line, bold=b.bold_first and index == 0))
    for index, note in enumerate(picture.notes):
        out.append(_text(PAD, bottom + PAD + 10 + index * LINE_H, note))
    out.append("</svg>")
    return "\n".join(out)


def _columns(picture: Picture, columns: Iterable[list[Box]], top: float = 36, gap_x: float = 60,
             gap_y: float = 14) -> None:
    """Lay boxes out in columns, left to right, each column top-down, and add them to the picture."""
    x: float = PAD
    for column in columns:
        if not column:
            continue
        y = top
        for b in column:
            b.x, b.y = x, y
            y += b.h + gap_y
        picture.boxes += column
        x += max(b.w for b in column) + gap_x


def _service_line(spec: PlatformSpec, name: str) -> str:
    return f"{registry()[name].display_name} {spec.pin_of(name)}"


def layers(spec: PlatformSpec, stack: str) -> Picture:
    """The seven layers, storage at the bottom, each with its owner and its services on this stack."""
    picture = Picture(f"Stack {stack}: the seven layers, their owners and services ({spec.target.value})")
    y = 36.0
    label_w = max(len(f"owner: {c.owner}") for c in spec.layers.values()) * CHAR_W + 2 * PAD
    for layer in reversed(list(Layer)):
        contract = spec.layers[layer]
        label = Box(f"layer-{layer.value}", [layer.value, f"owner: {contract.owner}"], PAD, y,
                    COLOURS[layer], w=label_w)
        picture.boxes.append(label)
        start = PAD + label_w + 16
        x, row_y = start, y
        for name in spec.services_of(layer):
            owner = spec.owner_of(name)
            lines = [_service_line(spec, name)] + ([f"owner: {owner}"] if owner != contract.owner else [])
            box = Box(f"svc-{name}", lines, x, row_y, COLOURS[layer], h=label.h)
            if x > start and x + box.w > MAX_WIDTH:  # wrap within the layer's band
                x, row_y = start, row_y + label.h + 6
                box.x, box.y = x, row_y
            picture.boxes.append(box)
            x += box.w + 10
        if not spec.services_of(layer):
            picture.boxes.append(Box(f"none-{layer.value}", ["(no service of its own on this target)"], x, y,
                                     NEUTRAL, bold_first=False, h=label.h))
        label.h = row_y + label.h - y
        y += label.h + 10
    return picture


def how_it_runs(spec: PlatformSpec, name: str) -> str:
    """How a service runs on the stack's target: a local process, a container, or what aws uses instead."""
    definition = registry()[name]
    if spec.target is Target.NATIVE:
        return ("local process on 127.0.0.1" if definition.native.process is not None
                else "folded into another process")
    if spec.target is Target.DOCKER:
        # A digest pin is a box's width on its own: its first 12 hex digits say which image it is.
        image, _, digest = spec.services[name].image.partition("@")
        return f"container {image}" + (f" @{digest[:19]}" if digest else "")
    return definition.aws.managed or "ECS Fargate task"


def services(spec: PlatformSpec, stack: str) -> Picture:
    """What runs where: each enabled service with how it runs on this stack's target, by layer."""
    where = {Target.NATIVE: "this host, as processes (no Docker, no cloud)",
             Target.DOCKER: "a Docker engine, one network", Target.AWS: "an AWS account"}[spec.target]
    picture = Picture(f"Stack {stack}: services on {spec.target.value} ({where})")
    columns = []
    for layer in Layer:
        column = [Box(f"svc-{name}", [_service_line(spec, name), *_wrap(how_it_runs(spec, name), 44)],
                      fill=COLOURS[layer]) for name in spec.services_of(layer)]
        if column:
            column.insert(0, Box(f"layer-{layer.value}", [layer.value], fill=NEUTRAL))
        columns.append(column)
    _columns(picture, columns, gap_x=24)
    return picture


def flows(spec: PlatformSpec, stack: str) -> Picture:
    """The data's paths on this stack: change capture, the streaming job, the engines, the catalog and the store."""
    picture = Picture(f"Stack {stack}: where the data flows")
    enabled = spec.enabled_services()
    reg = registry()
    default = default_catalog(spec)  # clients reach a gated catalog through its gate
    catalog, gate = default.name, default.gate if default.gate in enabled else None
    store = reg.provider(spec, STORE)
    database, broker = reg.provider(spec, DATABASE), reg.provider(spec, BROKER)
    sources: list[Box] = []
    streams: list[Box] = []
    writers: list[Box] = []
    into_catalog: list[tuple[str, str]] = []
    for connector in spec.streams.connectors if broker else []:
        if isinstance(connector, DebeziumPostgresSpec):
            if database and not any(b.key == "db" for b in sources):
                sources.append(Box("db", [f"{reg[database].display_name}: {connector.database}",
                                          "the operational source"], fill=COLOURS[Layer.CATALOG]))
            streams.append(Box(f"cdc-{connector.name}", [f"Debezium {connector.name}", f"slot {connector.slot}"],
                               fill=COLOURS[Layer.COMPUTE]))
            picture.arrows.append(("db", f"cdc-{connector.name}", ""))
            picture.arrows.append((f"cdc-{connector.name}", "broker", ""))
        elif isinstance(connector, IcebergSinkSpec):
            writers.append(Box(f"sink-{connector.name}", [f"Iceberg sink {connector.name}", f"-> {connector.table}"],
                               fill=COLOURS[Layer.COMPUTE]))
            picture.arrows.append(("broker", f"sink-{connector.name}", ""))
            into_catalog.append((f"sink-{connector.name}", "commits"))
    if broker and (streams or writers):
        streams.append(Box("broker", [f"{reg[broker].display_name} {spec.pin_of(broker)}", "topics"],
                           fill=COLOURS[Layer.COMPUTE]))
    job = spec.flink.job
    writer = reg.provider(spec, STREAMING_WRITER)
    if writer is not None:
        from_topic = job.source == KAFKA_SOURCE or (job.source == "auto" and broker is not None)
        writers.append(Box("writer", [f"{reg[writer].display_name} job {job.name}",
                                     f"-> {job.table}, one commit per checkpoint"], fill=COLOURS[Layer.COMPUTE]))
        if from_topic and broker:
            picture.arrows.append(("broker", "writer", job.kafka_topic))
        else:
            sources.append(Box("generator", ["order generator", f"{job.rows_per_second} rows/s"]))
            picture.arrows.append(("generator", "writer", ""))
        into_catalog.append(("writer", "commits"))
    engine = reg.provider(spec, SQL_ENGINE)
    engines = [Box(f"engine-{engine}", [_service_line(spec, engine), "SQL engine"], fill=COLOURS[Layer.COMPUTE])
               ] if engine else []
    engines.append(Box("host", ["host clients", ", ".join(HOST_ENGINES)], fill=COLOURS[Layer.COMPUTE]))
    for b in engines:
        into_catalog.append((b.key, "load, commit"))
    middle = [Box("gate", [f"{reg[gate].display_name}", "checks each identity's grants"],
                  fill=COLOURS[Layer.GOVERNANCE])] if gate else []
    cat = [Box("catalog", [f"{reg[catalog].display_name} {spec.pin_of(catalog)}", "metadata pointer, atomic swap"],
               fill=COLOURS[Layer.CATALOG])]
    bytes_ = [Box("store", [f"{reg[store].display_name} {spec.pin_of(store)}" if store else "S3",
                            "data and metadata files"], fill=COLOURS[Layer.STORAGE])]
    _columns(picture, [sources, streams, writers + engines, middle, cat, bytes_])
    first = "gate" if gate else "catalog"
    for key, label in into_catalog:
        picture.arrows.append((key, first, label))
    if gate:
        picture.arrows.append(("gate", "catalog", ""))
    picture.arrows.append(("catalog", "store", "metadata"))
    picture.notes.append("Every writer also writes its data files to the store directly (credentials per identity); "
                         "the catalog swaps the pointer.")
    return picture


def governance(spec: PlatformSpec, stack: str) -> Picture:
    """Identities, where their grants are enforced, and who may read, write and manage each namespace."""
    picture = Picture(f"Stack {stack}: who may do what, and where it is enforced")
    identities = [Box(f"id-{name}", [name, f"{spec.role_of_identity(name)}"
                                     + (f", for {identity.team}" if identity.team else "")],
                      fill=COLOURS[Layer.GOVERNANCE]) for name, identity in spec.identities.items()]
    points = [Box(f"ep-{index}", [line.split(":", 1)[0], *_wrap(line.split(":", 1)[-1].strip(), 48)],
                  fill=COLOURS[Layer.GOVERNANCE]) for index, line in enumerate(grants.enforced_by(spec))]
    namespaces = []
    for row in grants.grants_table(spec):
        lines = [f"namespace {row['namespace']}"]
        lines += [f"{action}: {', '.join(row[action]) or 'nobody'}" for action in ("read", "write", "manage")]
        namespaces.append(Box(f"ns-{row['namespace']}", lines, fill=COLOURS[Layer.STORAGE]))
    _columns(picture, [identities, points, namespaces], gap_x=70)
    for point in points:
        for identity in identities:
            picture.arrows.append((identity.key, point.key, ""))
        for namespace in namespaces:
            picture.arrows.append((point.key, namespace.key, ""))
    for line in grants.flags(spec):  # what this target trusts beyond the grants, said where they are drawn
        if line.startswith(f"{Target.NATIVE.value}:"):
            picture.notes += _wrap(f"Trusted: {line}", 130)
    picture.notes.append("Every enforcement point is rendered from the same grants (PlatformSpec.may).")
    return picture


def _wrap(text: str, width: int) -> list[str]:
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return [*lines, line] if line else lines


PICTURES = {"layers": layers, "services": services, "flows": flows, "governance": governance}


def render(spec: PlatformSpec, stack: str, which: str) -> str:
    """One picture of the stack as SVG."""
    return svg(PICTURES[which](spec, stack))


def document(spec: PlatformSpec, stack: str) -> str:
    """Every picture of the stack, one below the other, as one SVG document."""
    drawn = [svg(make(spec, stack)) for make in PICTURES.values()]
    sizes = []
    for text in drawn:
        head = text.split(">", 1)[0]
        sizes.append((float(head.split('width="')[1].split('"')[0]), float(head.split('height="')[1].split('"')[0])))
    width, height = max(w for w, _ in sizes), sum(h for _, h in sizes) + 20 * len(sizes)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="0 0 {width:.0f} {height:.0f}">']
    y = 0.0
    for text, (_, h) in zip(drawn, sizes, strict=True):
        out.append(text.replace("<svg ", f'<svg x="0" y="{y:.0f}" ', 1))
        y += h + 20
    out.append("</svg>")
    return "\n".join(out)


def figure(stack: str, which: str) -> str:
    """One picture of a stack file of this checkout as an HTML figure (inline SVG, a caption saying its source)."""
    from lakehouse_platform.config import load_stack

    drawn = render(load_stack(stack), stack, which)
    return (f'<figure class="lakehouse-picture">\n{drawn}\n<figcaption>Drawn from the model of '
            f"<code>Pulumi.{stack}.yaml</code> at this build (<code>lakehouse review --stack "
            f"{stack} --format svg</code>).</figcaption>\n</figure>")
