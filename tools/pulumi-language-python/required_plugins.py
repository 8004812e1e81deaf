# Lists the Pulumi resource plugins required by the packages importable in the
# selected Python environment: every package directory on sys.path that ships a
# pulumi-plugin.json with "resource": true. Run by the language host
# (plugins.go) as `python -c <this file>`; prints one JSON list.
import glob
import json
import os
import sys

out, seen = [], set()
for base in sys.path:
    if not base or not os.path.isdir(base):
        continue
    for path in sorted(glob.glob(os.path.join(base, "*", "pulumi-plugin.json"))):
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except Exception:
            continue
        if not isinstance(data, dict) or not data.get("resource"):
            continue
        if not data.get("name"):
            pkg = os.path.basename(os.path.dirname(path))
            data["name"] = pkg[len("pulumi_"):] if pkg.startswith("pulumi_") else pkg
            data["name"] = data["name"].replace("_", "-")
        out.append(data)
print(json.dumps(out))
