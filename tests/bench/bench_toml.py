"""bench_toml.py: merge a TOML snippet into a config the bench generated, so an A/B
side (or any run) can change a few keys without knowing the rest. Line-based: it
keeps the generated file's comments and order; gearboxd -t checks the result.
Standard library only (tomllib: Python >= 3.11).
`python3 bench_toml.py` runs its self-check."""
import re
import tomllib

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_-]+|\"[^\"]*\")\s*=")


def _toml_blocks(text):
    """[(header or None, name, [lines])]: the top-level lines, then one block per
    table header. A line that is not `key = ...` stays with the key above it (a
    multi-line array); gearboxd -t checks the merged file anyway."""
    blocks = [(None, None, [])]
    for line in text.splitlines():
        m = _HEADER.match(line)
        if m:
            blocks.append((m.group(1), m.group(2), [line]))
        else:
            blocks[-1][2].append(line)
    return blocks


def _key_groups(lines):
    """[(key or None, [lines])] for the lines of one block (its header excluded)."""
    groups = []
    for line in lines:
        m = _KEY.match(line)
        if m or not groups:
            groups.append((m.group(1) if m else None, [line]))
        else:
            groups[-1][1].append(line)
    return groups


def merge_toml(base, extra):
    """`base` with the snippet `extra` merged in: a key of a [table] the base already
    has replaces the base's key of that name (or is added to that table); other
    tables and every [[array-of-tables]] entry are appended. So a snippet can say
    `[limits] max_connections = 500` or add a `[[route]]` without knowing the rest."""
    tomllib.loads(extra)  # a syntax error names the snippet's own line
    out = _toml_blocks(base)
    for kind, name, lines in _toml_blocks(extra):
        target = next((b for b in out if b[0] == kind and b[1] == name), None) if kind != "[[" else None
        if target is None:
            if lines and any(ln.strip() for ln in lines):
                out.append((kind, name, list(lines)))
            continue
        body = lines if kind is None else lines[1:]
        new = _key_groups(body)
        keys = {k for k, _ in new if k}
        head = target[2][:0] if kind is None else target[2][:1]
        kept = [g for g in _key_groups(target[2][len(head):]) if g[0] not in keys]
        target[2][:] = head + [ln for _, g in kept for ln in g] + [ln for _, g in new for ln in g]
    return "\n".join(ln for _, _, lines in out for ln in lines) + "\n"


def _self_check():
    base = ('# generated\n[server]\nmodel = "async"\ngraceful_timeout = "3s"\n\n[[listen]]\n'
            'name = "http"\n\n[async]\nloops = 2\n\n[limits]\nmax_connections = 30000\n')
    extra = ('[limits]\nmax_connections = 500\nheader_timeout = "5s"\n[[listen]]\nname = "x"\n'
             '[metrics]\ninterval = "1s"\n')
    got = tomllib.loads(merge_toml(base, extra))
    want = {"server": {"model": "async", "graceful_timeout": "3s"},
            "listen": [{"name": "http"}, {"name": "x"}], "async": {"loops": 2},
            "limits": {"max_connections": 500, "header_timeout": "5s"}, "metrics": {"interval": "1s"}}
    assert got == want, got
    assert merge_toml(base, "") == base
    try:
        merge_toml(base, "[limits\n")
    except tomllib.TOMLDecodeError:
        pass
    else:
        raise AssertionError("a broken snippet was accepted")
    print("bench_toml: self-check passed")


if __name__ == "__main__":
    _self_check()
