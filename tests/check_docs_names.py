#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every name the user's pages give for something the programs define exists there (TAP).
Pages: README.md, docs/*.md (docs/metrics.md is the reference itself),
deploy/libvirt/README.md, and the comments users read in deploy/debian/*.default and
deploy/systemd/*.service.

1. Each metric named (kepler_*, virtwatt_*, with {a,b} alternatives and * wildcards; a counter
   may be named without _total) is a family of docs/metrics.md, which the test metrics_doc keeps
   equal to the family tables.
2. Each dotted --flag named is one of virtwatt-host's, virtwatt-guest's or virtwatt-model's, as
   their --help-all lists them (Kepler's spellings included); and on a line that runs one of the
   programs (`virtwatt-guest --x ...`), every --flag after the program's name is that program's.
3. Each YAML key path in backticks whose first part is a section of the daemons' files
   (`passthrough.shareRoot`) is a key of either daemon (--help-all's `YAML:` lines, Kepler's
   spellings); and every key of the example configs deploy/config/virtwatt-{host,guest}.yaml is
   one of that daemon's own. Keys of the Helm chart's values (`host.nodeSelector`) are the
   chart's, not the daemons'.
4. In a table whose second column is the default, each row that gives one flag and one value in
   backticks (| `--monitor.interval` | `5s` |) states the default --help-all shows (where that
   is one value, not words).
usage: check_docs_names.py SOURCE_ROOT HOST_BIN GUEST_BIN MODEL_BIN"""
import pathlib
import re
import subprocess
import sys

root = pathlib.Path(sys.argv[1]).resolve()
bins = {"virtwatt-host": sys.argv[2], "virtwatt-guest": sys.argv[3], "virtwatt-model": sys.argv[4]}
pages = [root / "README.md", root / "deploy" / "libvirt" / "README.md"]
pages += [p for p in sorted((root / "docs").glob("*.md")) if p.name != "metrics.md"]
# what the packages and units tell their users in comments: /etc/default's ARGS, the units
pages += sorted((root / "deploy" / "debian").glob("*.default"))
pages += sorted((root / "deploy" / "systemd").glob("*.service"))
FLAG = re.compile(r"(?<![\w-])--(?:no-)?([a-z][a-z0-9-]*(?:\.[a-z0-9-]+)*)")


def helptext(prog, *args):
    return subprocess.run([bins[prog], *args], capture_output=True, text=True, check=True).stdout


def flags_of(text):
    """The flags a --help text lists (its option lines, Kepler's spellings)."""
    return {m.group(1) for m in FLAG.finditer(text.replace("[no-]", ""))}


def defaults_of(text):
    """Each option's default as --help-all shows it: {flag: default}."""
    out, flag = {}, None
    for line in text.splitlines():
        m = re.match(r"  (?:-h, )?--(?:\[no-\])?([a-z][\w.-]*)", line)
        if m:
            flag = m.group(1)
        if flag and not line.strip():
            flag = None
        d = re.search(r"\(default: ([^)]*)\)", line)
        if flag and d:
            out.setdefault(flag, d.group(1))
    return out


def yaml_keys_of(text):
    """The YAML keys a --help-all lists: `YAML: key` lines and Kepler's `YAML key` spellings."""
    return set(re.findall(r"YAML:? ([a-z][\w.-]*[\w])", re.sub(r"\s+", " ", text)))


helps = {p: helptext(p, "--help-all") for p in ("virtwatt-host", "virtwatt-guest")}
helps["virtwatt-model"] = helptext("virtwatt-model", "--help") + helptext(
    "virtwatt-model", "train", "--help")
flags = {p: flags_of(t) for p, t in helps.items()}
defaults = {}  # the docs' tables are virtwatt-host's where the daemons differ (passthrough.enable)
for p in ("virtwatt-guest", "virtwatt-host"):
    defaults.update(defaults_of(helps[p]))
all_flags = set().union(*flags.values())
keys = {p: yaml_keys_of(helps[p]) for p in ("virtwatt-host", "virtwatt-guest")}
all_keys = keys["virtwatt-host"] | keys["virtwatt-guest"]
sections = {k.split(".")[0] for k in all_keys}
chart_values = root / "deploy" / "helm" / "virtwatt" / "values.yaml"
families = set(re.findall(r"^\| `([a-z_:0-9]+)`",
                          (root / "docs" / "metrics.md").read_text(encoding="utf-8"), re.M))


def expand(name):
    """kepler_{node,pod}_cpu_joules_total -> both names. Braces at the end are alternatives
    when every one names a family (virtwatt_vm_gpu_{joules_total,watts}), else a label set
    (virtwatt_table_entries{table}), cut."""
    m = re.search(r"\{([a-z0-9_,]*)\}", name)
    if not m:
        return [name.split("{")[0].rstrip(",_")]
    alts = [n for alt in m.group(1).split(",")
            for n in expand(name[:m.start()] + alt + name[m.end():])]
    if m.end() < len(name) and re.match(r"[a-z_{]", name[m.end()]):
        return alts
    return alts if all(family_known(a) for a in alts) else [name[:m.start()].rstrip(",_")]


def family_known(name):
    if name in families or name + "_total" in families:
        return True
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and name[: -len(suffix)] in families:
            return True
    if "*" in name:
        rx = re.compile("^" + re.escape(name).replace(r"\*", ".*") + "$")
        return any(rx.match(f) for f in families)
    return False


def flag_known(flag, known, line, end):
    """A flag of known; `--model.train.*` and `--web.listen…` name a group; `--internal-*`
    flags are the programs' own (a helper run of itself, never in --help); a line that calls a
    flag unknown may name one that is not (`--monitor.intervl`)."""
    if flag in known or flag.startswith("internal-") or "unknown" in line:
        return True
    if line[end:end + 1] == "…":
        return any(f.startswith(flag) for f in known)
    return line[end:end + 2] == ".*" and any(f.startswith(flag + ".") for f in known)


def program_runs(line):
    """(program, the text after its name) for each run of one of ours on this line."""
    for m in re.finditer(r"(?<![\w/.-])(virtwatt-(?:host|guest|model))((?: +--?[^\s`|]+)+)", line):
        yield m.group(1), m.group(2)


def config_keys(path, mappings=False):
    """The key paths of a YAML file of nested mappings (the example configs' shape): those
    holding a value, and with mappings those holding a mapping too."""
    stack, out = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^( *)([A-Za-z][\w-]*):(.*)$", line)
        if not m:
            continue
        indent, key, value = len(m.group(1)), m.group(2), m.group(3).split("#")[0].strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, key))
        if value or mappings:
            out.append(".".join(k for _, k in stack))
    return out


chart_keys = set(config_keys(chart_values, mappings=True))
n = failed = 0


def report(ok, what, bad):
    global n, failed
    n += 1
    failed += not ok
    print("%s %d - %s" % ("ok" if ok else "not ok", n, what))
    for b in bad:
        print("# " + b)


for page in pages:
    rel = page.relative_to(root)
    bad_m, bad_f, bad_k, bad_d = [], [], [], []
    header = prev = ""
    for i, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        for m in re.finditer(r"(?<![\w/.-])((?:kepler|virtwatt)_[a-z0-9_{},*]+)", line):
            for name in expand(m.group(1)):
                if name not in ("kepler_config",) and not family_known(name):
                    bad_m.append("%s:%d: metric %s is not in docs/metrics.md" % (rel, i, name))
        for m in FLAG.finditer(line):
            if "." in m.group(1) and not flag_known(m.group(1), all_flags, line, m.end()):
                bad_f.append("%s:%d: --%s is no program's flag" % (rel, i, m.group(1)))
        for prog, rest in program_runs(line):
            for m in FLAG.finditer(rest):
                if not flag_known(m.group(1), flags[prog], rest, m.end()):
                    bad_f.append("%s:%d: %s has no flag --%s" % (rel, i, prog, m.group(1)))
        for m in re.finditer(r"`([a-z][a-z0-9]*(?:\.[a-z][A-Za-z0-9-]*)+)(?::[^`]*)?`", line):
            key = m.group(1)
            if (key.split(".")[0] in sections and key not in all_keys and key not in all_flags
                    and key not in chart_keys and re.search(r"[A-Z]", key)):
                bad_k.append("%s:%d: YAML key %s is no daemon's" % (rel, i, key))
        if re.match(r"\|\s*-+\s*\|", line):
            header = prev
        elif not line.startswith("|"):
            header = ""
        prev = line
        m = re.match(r"\| `--([a-z][\w.-]*)` \| `([^`]*)` \|", line)
        said = defaults.get(m.group(1), " ") if m else " "
        if (m and re.match(r"\|[^|]*\|\s*default\s*\|", header) and " " not in said
                and said != m.group(2)):
            bad_d.append("%s:%d: --%s defaults to %s, not %s" % (rel, i, m.group(1),
                                                                 defaults[m.group(1)], m.group(2)))
    report(not bad_m, "%s: every metric named is in docs/metrics.md" % rel, bad_m)
    report(not bad_f, "%s: every flag named is the program's" % rel, bad_f)
    report(not bad_k, "%s: every YAML key named is a daemon's" % rel, bad_k)
    report(not bad_d, "%s: every default a table gives is --help's" % rel, bad_d)

for prog in ("virtwatt-host", "virtwatt-guest"):
    path = root / "deploy" / "config" / (prog + ".yaml")
    bad = ["%s: %s is not a key of %s" % (path.relative_to(root), k, prog)
           for k in config_keys(path) if k not in keys[prog]]
    report(not bad, "%s: every key is %s's" % (path.relative_to(root), prog), bad)

print("1..%d" % n)
sys.exit(1 if failed or n == 0 else 0)
