"""Device counts from every source are ASCII digits in ``1..MAX_CPU_DEVICES`` (issue 34): Unicode
digits (``²`` passes ``str.isdigit()``, ``int()`` refuses it), whitespace, huge values, in
``--cpu-devices``, ``JAXPARADIGM_CPU_DEVICES``, ``JAX_NUM_CPU_DEVICES`` and ``XLA_FLAGS``: each a
count or one :class:`InputError` line naming the source; the CLI exits 2 with one line."""

import os
import re
import string
from decimal import Decimal

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from jaxparadigm import cli
from jaxparadigm.app import cpu_devices as cd
from jaxparadigm.errors import InputError

ASCII_SPACE = " \t\n\r\f\v"


def usable_count() -> int:
    """What ``auto`` means here, counted independently of the code under test."""
    return len(os.sched_getaffinity(0))


UNICODE_DIGITS = [chr(c) for c in range(0x110000) if chr(c).isdigit() and not chr(c).isascii()]
UNICODE_SPACE = [chr(c) for c in range(0x110000) if chr(c).isspace() and not chr(c).isascii()]


def _oracle(text: str) -> int | None:
    """The count ``text`` means, by the documented rule written out independently, or None."""
    core = text.strip(ASCII_SPACE)
    if not core or any(c not in string.digits for c in core):
        return None
    n = Decimal(core)  # no digit limit, unlike int()
    return int(n) if 1 <= n <= cd.MAX_CPU_DEVICES else None


def _digits_only(text: str) -> int | None:
    """JAX's and XLA's own variables: digits only (``auto`` is this project's word)."""
    return None if text.strip(ASCII_SPACE).lower() == "auto" else _oracle(text)


def _sources(text: str):
    """``(where, parse, want)`` for each of the four sources given ``text``; ``want`` is None for
    a refusal and "unset" where the source then counts as not given."""
    want, unset = _oracle(text), text.strip(ASCII_SPACE) in ("", "-1")
    ours = usable_count() if text.strip(ASCII_SPACE).lower() == "auto" else want
    flag = f"--xla_force_host_platform_device_count={text}"
    # XLA splits XLA_FLAGS at ASCII whitespace: the flag's value is the text up to the first
    in_flags = _digits_only(re.split("[ \t\n\r\f\v]", text, maxsplit=1)[0])
    return [
        ("--cpu-devices", lambda: cd.cpu_request(text, {}).devices, ours),
        (
            cd.ENV_CPU_DEVICES,
            lambda: cd.cpu_request(None, {cd.ENV_CPU_DEVICES: text}).devices,
            "unset" if not text.strip(ASCII_SPACE) else ours,
        ),
        (
            cd.ENV_JAX_CPU_DEVICES,
            lambda: cd.user_device_count({cd.ENV_JAX_CPU_DEVICES: text}),
            "unset" if unset else _digits_only(text),
        ),
        ("XLA_FLAGS", lambda: cd.user_device_count({"XLA_FLAGS": f"--a=1 {flag} --b=2"}), in_flags),
    ]


_pieces = st.one_of(
    st.sampled_from(string.digits),
    st.sampled_from(UNICODE_DIGITS),
    st.sampled_from(UNICODE_SPACE),
    st.sampled_from(ASCII_SPACE),
    st.integers(0, 10**30).map(str),
    st.sampled_from(["1024", "1025", "99999999999", "0", "00", "-3", "+2", "²", "٣", "auto"]),
)
_texts = st.lists(_pieces, min_size=1, max_size=6).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=_texts)
@example(text="²")
@example(text="99999999999")
@example(text=" 8\t")
@example(text="\u00a08")
@example(text="1" + "0" * 5000)
@example(text="0" * 40 + "7")
@example(text="auto")
@example(text=" AUTO ")
@example(text="auto 0")
def test_every_source_reads_a_count_or_refuses_in_one_line(text):
    for where, parse, want in _sources(text):
        if want == "unset":
            continue  # an empty value (or JAX's own -1): the next source applies
        if want is None:
            with pytest.raises(InputError) as err:
                parse()
            msg = str(err.value)
            assert "\n" not in msg and len(msg) < 300, msg
            assert where in msg.partition(":")[0], (where, msg)
        else:
            got = parse()
            assert (got if isinstance(got, int) else got[1]) == want, where


def test_the_bound_is_inclusive_and_named():
    assert cd.parse_cpu_devices(str(cd.MAX_CPU_DEVICES), "w") == cd.MAX_CPU_DEVICES
    assert cd.parse_cpu_devices(cd.MAX_CPU_DEVICES, "w") == cd.MAX_CPU_DEVICES
    with pytest.raises(InputError, match=r"^w: got 1025, expected at most 1024 CPU devices"):
        cd.parse_cpu_devices(1025, "w")
    with pytest.raises(InputError, match=r"^w: got '²', expected an integer >= 1 or 'auto'"):
        cd.parse_cpu_devices("²", "w")


def test_xla_flags_split_at_ascii_whitespace_only():
    assert cd.xla_flags(" --a=1\t--b=2\n") == ["--a=1", "--b=2"]
    assert cd.xla_flags("--a=1\u00a0--b=2") == ["--a=1\u00a0--b=2"]
    flag = "--xla_force_host_platform_device_count=2\u00a0--b"
    with pytest.raises(InputError, match="XLA_FLAGS"):
        cd.user_device_count({"XLA_FLAGS": flag})


@pytest.mark.parametrize(
    ("option", "env"),
    [
        ("²", {}),
        ("99999999999", {}),
        (None, {cd.ENV_CPU_DEVICES: "²"}),
        (None, {cd.ENV_JAX_CPU_DEVICES: "99999999999"}),
        (None, {"XLA_FLAGS": "--xla_force_host_platform_device_count=²"}),
        (None, {"XLA_FLAGS": "--xla_force_host_platform_device_count=99999999999"}),
    ],
)
def test_cli_exits_2_with_one_line(tmp_path, capsys, monkeypatch, option, env):
    for name in (cd.ENV_CPU_DEVICES, cd.ENV_JAX_CPU_DEVICES, "XLA_FLAGS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.yaml").write_text("name: ok\n")
    argv = ["run", "ok.yaml"]
    assert cli.main([*argv, "--cpu-devices", option] if option else argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("jaxparadigm run: error: ") and "\n" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.yaml"]  # nothing started
