#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The structure of a Kubernetes apps/v1 DaemonSet (the fields penny's example
# uses, checked as the API server would: required fields, known keys,
# selector matching the template, every mount a volume); prints the
# container's args, one a line.  No network, no cluster.
#   k8s-daemonset.py FILE.yaml
import sys

import yaml


def known(d, keys, what):
    extra = set(d) - set(keys)
    assert not extra, f"{what}: unknown keys {sorted(extra)}"


docs = [x for x in yaml.safe_load_all(open(sys.argv[1])) if x is not None]
assert len(docs) == 1, f"{len(docs)} documents"
d = docs[0]
assert d.get("apiVersion") == "apps/v1" and d.get("kind") == "DaemonSet", d.get("kind")
known(d, ("apiVersion", "kind", "metadata", "spec"), "DaemonSet")
assert d["metadata"]["name"] and d["metadata"]["namespace"]
spec = d["spec"]
known(spec, ("selector", "template", "updateStrategy", "minReadySeconds",
             "revisionHistoryLimit"), "spec")
sel = spec["selector"]["matchLabels"]
t = spec["template"]
labels = t["metadata"]["labels"]
assert sel and all(labels.get(k) == v for k, v in sel.items()), (sel, labels)
for k, v in {**sel, **labels, **d["metadata"].get("labels", {})}.items():
    assert isinstance(k, str) and isinstance(v, str), (k, v)
ps = t["spec"]
known(ps, ("hostNetwork", "hostPID", "terminationGracePeriodSeconds", "nodeSelector",
           "tolerations", "containers", "volumes", "priorityClassName",
           "serviceAccountName"), "pod spec")
for k, v in ps.get("nodeSelector", {}).items():
    assert isinstance(v, str), f"nodeSelector {k}: {v!r} is not a string"
for tl in ps.get("tolerations", []):
    assert tl["operator"] in ("Exists", "Equal"), tl
    assert tl.get("effect") in (None, "NoSchedule", "PreferNoSchedule", "NoExecute"), tl
vols = {v["name"]: v for v in ps["volumes"]}
assert len(vols) == len(ps["volumes"]), "two volumes of one name"
for v in vols.values():
    assert len(set(v) - {"name"}) == 1, f"volume {v['name']}: one source"
    if "hostPath" in v:
        assert v["hostPath"]["path"].startswith("/"), v
        assert v["hostPath"].get("type") in ("Directory", "DirectoryOrCreate"), v
(c,) = ps["containers"]
known(c, ("name", "image", "args", "command", "resources", "securityContext",
          "volumeMounts", "env", "imagePullPolicy"), "container")
assert c["name"] and c["image"]
for k in ("requests", "limits"):
    known(c["resources"][k], ("cpu", "memory"), k)
known(c["securityContext"], ("readOnlyRootFilesystem", "allowPrivilegeEscalation",
                             "capabilities", "privileged", "runAsUser"), "securityContext")
mounts = {}
for m in c["volumeMounts"]:
    known(m, ("name", "mountPath", "readOnly"), "volumeMount")
    assert m["name"] in vols, f"mount of no volume {m['name']}"
    assert m["mountPath"].startswith("/"), m
    mounts[m["mountPath"]] = m
a = c["args"]
assert all(isinstance(x, str) for x in a), a
assert a[0] == "top" and "--prom" in a, a
prom = a[a.index("--prom") + 1]
assert prom.endswith(".prom"), prom
pdir = prom.rsplit("/", 1)[0]
assert pdir in mounts and not mounts[pdir].get("readOnly"), f"{prom} is on no writable mount"
print("\n".join(a))
