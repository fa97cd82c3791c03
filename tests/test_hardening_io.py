"""Hardening of input and output: files, paths, sizes, values in messages, the terminal, the CLI.

Every bad input ends the same way: in Python a GCEError naming the field; on the command line exit status 2,
nothing on stdout and exactly one line on stderr, ``gce: error: ...``, naming the field.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import subprocess
import sys

import pytest

import gce.constraints.data as data_module
import gce.files.scenario as scenario_module
from gce import Report, load_scenario, solve
from gce.cli import main
from gce.errors import InvalidParameterError, InvalidScenarioError
from gce.files.scenario import MAX_DATABASES, MAX_DEPTH, MAX_REPEAT, scenario_from_dict

ROOT = pathlib.Path(__file__).resolve().parent.parent
HOSPITALS = str(ROOT / "examples" / "hospitals.toml")

GOOD = """title = "t"
databases = 4
delta = 1e-6
[[invocations]]
databases = "all"
mechanism = { kind = "approx", epsilon = 0.1, delta = 1e-9 }
[[constraints]]
kind = "at_most"
m = 2
"""

ESC = "\x1b"


def write(folder: pathlib.Path, text: str | bytes, name: str = "s.toml") -> pathlib.Path:
    path = folder / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def error_of(path: str | os.PathLike, **options) -> InvalidScenarioError:
    with pytest.raises(InvalidScenarioError) as info:
        load_scenario(path, **options)
    return info.value


def one_error_line(capsys, *argv: str) -> str:
    """Run the CLI; assert the error contract; return the message after 'gce: error: '."""
    status = main(list(argv))
    out, err = capsys.readouterr()
    assert status == 2, err
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("gce: error: ") and "Traceback" not in err
    assert ESC not in err
    return err[len("gce: error: "):-1]


# --- 1. the scenario file: size, encoding, nesting ---------------------------------------------------------


def test_a_leading_byte_order_mark_is_skipped(tmp_path):
    scenario = load_scenario(write(tmp_path, b"\xef\xbb\xbf" + GOOD.encode()))
    assert scenario.n == 4 and scenario.title == "t"


def test_a_file_larger_than_the_cap_is_refused_after_reading_one_byte_more(tmp_path, monkeypatch):
    monkeypatch.setattr(scenario_module, "MAX_SCENARIO_BYTES", len(GOOD))
    assert load_scenario(write(tmp_path, GOOD)).n == 4  # exactly at the cap
    error = error_of(write(tmp_path, GOOD + "\n"))
    assert error.field == "file" and "is larger than" in error.detail and "the limit for scenario files" in error.detail


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_dev_zero_is_refused_and_an_endless_pipe_is_read_only_up_to_the_cap(monkeypatch):
    """A device is never read (gce.files.paths); a pipe handed to gce (/dev/fd/N, /dev/stdin) is, up to the cap."""
    import threading

    error = error_of("/dev/zero")
    assert str(error) == "file: cannot read '/dev/zero': is a device, not a regular file (gce reads only regular files)"
    monkeypatch.setattr(scenario_module, "MAX_SCENARIO_BYTES", 2**20)
    read, write = os.pipe()

    def feed() -> None:  # until the reader closes the pipe
        try:
            while True:
                os.write(write, bytes(2**16))
        except OSError:
            pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        error = error_of(f"/dev/fd/{read}")
    finally:
        os.close(read)
        feeder.join()
        os.close(write)
    assert str(error) == f"file: '/dev/fd/{read}' is larger than 1 MiB, the limit for scenario files"


def test_bytes_that_are_not_utf8_are_located_not_shown(tmp_path):
    error = error_of(write(tmp_path, GOOD.encode() + b'x = "\xff\xfe secret"\n'))
    assert error.field == "file"
    assert error.detail.endswith("is not UTF-8 text (line 10, byte 6 of the line)")
    assert "secret" not in str(error)


@pytest.mark.parametrize("opening, closing", [("{b = ", "}"), ("[", "]")])
def test_nesting_5000_deep_is_refused_without_a_recursion_error(tmp_path, opening, closing):
    error = error_of(write(tmp_path, GOOD + "a = " + opening * 5000 + "1" + closing * 5000 + "\n"))
    assert error.field == "file" and f"nests tables or arrays too deeply (the limit is {MAX_DEPTH} levels)" in \
        error.detail


def test_nesting_below_what_tomllib_can_read_is_refused_with_its_path(tmp_path):
    error = error_of(write(tmp_path, "a = " + "[" * 40 + "1" + "]" * 40 + "\n" + GOOD))
    assert error.field == "a" + "[0]" * (MAX_DEPTH - 1)
    assert error.detail == f"nests tables or arrays more than {MAX_DEPTH} levels deep"


def test_a_cyclic_python_table_is_refused():
    table: dict = {"databases": 2, "invocations": []}
    table["invocations"].append(table)
    with pytest.raises(InvalidScenarioError, match="levels deep"):
        scenario_from_dict(table)


# --- 8. sizes a few bytes can ask for ------------------------------------------------------------------------


@pytest.mark.parametrize("value, detail", [
    ("1000000000", "must be a count in 1..10,000,000, got 1000000000"),
    ("9223372036854775807", "must be a count in 1..10,000,000, got 9223372036854775807"),
    ("9223372036854775808", "must fit in a 64-bit integer (TOML integers are 64-bit), got 9223372036854775808"),
    ("-9223372036854775809", "must fit in a 64-bit integer (TOML integers are 64-bit), got -9223372036854775809"),
])
def test_database_counts_are_refused_before_anything_is_allocated(tmp_path, value, detail):
    error = error_of(write(tmp_path, GOOD.replace("databases = 4", f"databases = {value}")))
    assert (error.field, error.detail) == ("databases", detail)


def test_an_integer_too_long_for_python_to_read_names_the_file(tmp_path):
    error = error_of(write(tmp_path, GOOD + "x = " + "9" * 5000 + "\n"))
    assert error.field == "file" and "holds a number TOML cannot read" in error.detail


def test_a_list_of_names_longer_than_the_limit(monkeypatch):
    monkeypatch.setattr(scenario_module, "MAX_DATABASES", 3)
    table = {"databases": ["a", "b", "c", "d"], "invocations": []}
    with pytest.raises(InvalidScenarioError, match=r"^databases: lists 4 names; at most 3 databases"):
        scenario_from_dict(table)


def test_repeat_is_a_count_never_expanded(tmp_path):
    scenario = load_scenario(write(tmp_path, GOOD.replace('databases = "all"', 'databases = "all"\nrepeat = '
                                                                              "1000000000000")))
    assert len(scenario.invocations) == 4  # one per database, whatever the repeat
    assert {inv.repeat for inv in scenario.invocations} == {10**12}
    assert scenario_from_dict({"databases": 1, "invocations": [
        {"databases": 0, "repeat": MAX_REPEAT, "mechanism": {"kind": "pure", "epsilon": 1.0}}]}
    ).invocations[0].repeat == 2**53


@pytest.mark.parametrize("repeat, detail", [
    (2**53 + 1, "must be an integer in 1..2**53 (9,007,199,254,740,992), got 9007199254740993"),
    (2**63, "must fit in a 64-bit integer (TOML integers are 64-bit), got 9223372036854775808"),
    (0, "must be an integer in 1..2**53 (9,007,199,254,740,992), got 0"),
    (True, "must be an integer in 1..2**53 (9,007,199,254,740,992), got true"),
])
def test_repeat_limits(repeat, detail):
    with pytest.raises(InvalidScenarioError) as info:
        scenario_from_dict({"databases": 2, "invocations": [
            {"databases": "all", "repeat": repeat, "mechanism": {"kind": "pure", "epsilon": 1.0}}]})
    assert (info.value.field, info.value.detail) == ("invocations[0].repeat", detail)


def test_the_invocation_pairs_listed_are_counted_before_they_are_built(monkeypatch):
    monkeypatch.setattr(scenario_module, "MAX_INVOCATION_ENTRIES", 5)
    group = {"databases": "all", "mechanism": {"kind": "pure", "epsilon": 1.0}}
    assert len(scenario_from_dict({"databases": 4, "invocations": [group]}).invocations) == 4
    with pytest.raises(InvalidScenarioError) as info:
        scenario_from_dict({"databases": 4, "invocations": [group, group]})
    assert info.value.field == "invocations[1].databases"
    assert "8 (database, invocation) pairs; at most 5 are supported" in info.value.detail


def test_the_default_limits():
    assert (MAX_DATABASES, scenario_module.MAX_INVOCATION_ENTRIES, MAX_REPEAT) == (10**7, 10**7, 2**53)
    assert scenario_module.MAX_SCENARIO_BYTES == 64 * 2**20 and data_module.MAX_TABLE_BYTES == 256 * 2**20


# --- 7. values as written in TOML ------------------------------------------------------------------------


def test_an_overflowed_number_names_its_full_path(tmp_path):
    text = GOOD.replace('{ kind = "approx", epsilon = 0.1, delta = 1e-9 }', '{ kind = "zcdp", rho = 1e999 }')
    error = error_of(write(tmp_path, text))
    assert str(error) == "invocations[0].mechanism.rho: must be finite, got inf (the number written overflows a double)"
    error = error_of(write(tmp_path, GOOD.replace("epsilon = 0.1", "epsilon = -1e999")))
    assert str(error) == ("invocations[0].mechanism.epsilon: must be finite, got -inf (the number written "
                          "overflows a double)")
    # 1e308 is a double; `inf` written as such is not an overflow, and the record refuses it by itself.
    ok = GOOD.replace('{ kind = "approx", epsilon = 0.1, delta = 1e-9 }', '{ kind = "zcdp", rho = 1e308 }')
    assert load_scenario(write(tmp_path, ok)).invocations[0].guarantee.rho == 1e308
    error = error_of(write(tmp_path, GOOD.replace("epsilon = 0.1", "epsilon = inf")))
    assert error.field == "invocations[0].mechanism.epsilon" and "overflows" not in error.detail


def test_a_number_that_underflows_to_zero_is_refused(tmp_path):
    # Reading 1e-999 as 0 would turn an approximate guarantee into a pure one: never silently.
    error = error_of(write(tmp_path, GOOD.replace("delta = 1e-9", "delta = 1e-999")))
    assert error.field == "invocations[0].mechanism.delta"
    assert error.detail == "is too small for a double: the number written rounds to 0.0 (write 0 if 0 is meant)"
    assert load_scenario(write(tmp_path, GOOD.replace("delta = 1e-9", "delta = 0.0e-999"))).n == 4


@pytest.mark.parametrize("change, field, detail", [
    (("m = 2", "m = true"), "constraints[0].m", "must be an integer, got true"),
    (("m = 2", 'm = "2"'), "constraints[0].m", 'must be an integer, got "2"'),
    (('kind = "at_most"', 'kind = "at_least"'), "constraints[0].kind",
     'unknown kind "at_least"; expected one of at_most, exclusive, together, conflicts, patterns'),
    (("epsilon = 0.1", "epsilon = false"), "invocations[0].mechanism.epsilon", "must be a number, got false"),
    (('title = "t"', "title = [1, 2]"), "title", "must be a string, got [1, 2]"),
    (('title = "t"', 'neighborhood = "x\\u001b[2J"'), "neighborhood",
     'must be "unbounded" or "bounded", got "x\\u001B[2J"'),
    (('databases = "all"', "databases = [0, {a = 1}]"), "invocations[0].databases[1]",
     "unknown database { a = 1 } (databases are 0..3)"),
    (('title = "t"', '"we ird\\u001b" = 1'), '"we ird\\u001B"', "is not a scenario key; the keys are title, "
     "databases, neighborhood, delta, epsilon, rtol, invocations, constraints, hypotheses"),
    (('mechanism = {', 'extra = 2020-01-01\nmechanism = {'), "invocations[0].extra",
     "is not a key of an invocation; its keys are databases, repeat, mechanism"),
])
def test_messages_show_values_as_written_in_toml(tmp_path, change, field, detail):
    error = error_of(write(tmp_path, GOOD.replace(*change)))
    assert (error.field, error.detail) == (field, detail)
    assert ESC not in str(error)


def test_names_in_messages_are_toml_strings():
    with pytest.raises(InvalidScenarioError) as info:
        scenario_from_dict({"databases": ["a", "b", "a"], "invocations": []})
    assert str(info.value) == 'databases[2]: repeats the name "a" (databases[0])'
    with pytest.raises(InvalidScenarioError) as info:
        scenario_from_dict({"databases": ["a", "b"], "invocations": [
            {"databases": ["a", "z"], "mechanism": {"kind": "pure", "epsilon": 1}}]})
    assert str(info.value) == 'invocations[0].databases[1]: unknown database "z" (databases are 0..1 or their names)'


def test_a_long_value_is_cut_short_in_the_message():
    with pytest.raises(InvalidScenarioError) as info:
        scenario_from_dict({"databases": 2, "title": list(range(10**5)), "invocations": []})
    assert info.value.detail.startswith("must be a string, got [0, 1, 2,") and info.value.detail.endswith(", ...]")
    assert len(str(info.value)) < 150


# --- 2. data files: inside the scenario's folder, regular, never echoed -----------------------------------


SECRET = "root:x:0:0:SECRET-CONTENT:/root:/bin/bash\n"


def with_data(file: str) -> str:
    return GOOD + f'[[constraints]]\nkind = "from_data"\nfile = "{file}"\n'


@pytest.fixture
def folders(tmp_path):
    inside, outside = tmp_path / "scenarios", tmp_path / "elsewhere"
    inside.mkdir()
    outside.mkdir()
    (inside / "members.csv").write_text("ann,0\nann,1\nbob,2\n")
    (outside / "secret.csv").write_text(SECRET)
    (outside / "members.csv").write_text("ann,0\nann,1\nann,2\n")
    return inside, outside


def test_a_data_file_in_the_folder_is_read(folders):
    inside, _ = folders
    scenario = load_scenario(write(inside, with_data("members.csv")))
    assert any("estimated from data" in note for note in scenario.notes)
    assert [c.m for c in scenario.constraints.constraints if c.kind == "at_most"] == [2, 2]


@pytest.mark.parametrize("reference", ["absolute", "climbing", "symlink"])
def test_a_data_file_outside_the_folder_is_refused_unless_allowed(folders, reference):
    inside, outside = folders
    if reference == "symlink":
        (inside / "link.csv").symlink_to(outside / "members.csv")
    file = {"absolute": str(outside / "members.csv"), "climbing": "../elsewhere/members.csv",
            "symlink": "link.csv"}[reference]
    path = write(inside, with_data(file))
    error = error_of(path)
    assert error.field == "constraints[1].file"
    assert "is outside the scenario's folder" in error.detail and "allow_outside_files=True" in error.detail
    scenario = load_scenario(path, allow_outside_files=True)
    assert [c.m for c in scenario.constraints.constraints if c.kind == "at_most"] == [2, 3]


def test_the_file_content_is_never_echoed(folders):
    inside, outside = folders
    error = error_of(write(inside, with_data(str(outside / "secret.csv"))), allow_outside_files=True)
    assert error.field == "constraints[1].file"
    assert "line 1" in error.detail and "expected 2 fields (individual, database), got 1" in error.detail
    assert "SECRET-CONTENT" not in str(error) and "/bin/bash" not in str(error)
    (outside / "secret.csv").write_text("ann,0\nSECRET-ID,SECRET-DB\n")
    error = error_of(write(inside, with_data(str(outside / "secret.csv"))), allow_outside_files=True)
    assert "line 2: field 2 (database): not a known database id" in error.detail and "SECRET" not in str(error)


@pytest.mark.skipif(not os.path.exists("/etc/passwd"), reason="needs /etc/passwd")
def test_etc_passwd_is_refused_and_never_quoted(tmp_path):
    error = error_of(write(tmp_path, with_data("/etc/passwd")))
    assert error.field == "constraints[1].file" and "outside the scenario's folder" in error.detail
    error = error_of(write(tmp_path, with_data("/etc/passwd")), allow_outside_files=True)
    first = pathlib.Path("/etc/passwd").read_text().splitlines()[0]
    assert first not in str(error) and "line 1" in str(error)


def test_random_bytes_in_a_csv_name_the_line(folders):
    inside, _ = folders
    (inside / "members.csv").write_bytes(b"ann,0\nbob,1\n\x93\xff\xfeSECRET,2\n")
    error = error_of(write(inside, with_data("members.csv")))
    assert str(error) == "constraints[1].file: members.csv line 3: is not UTF-8 text (byte 1 of the line)"


def test_a_csv_with_a_byte_order_mark_is_read(folders):
    inside, _ = folders
    (inside / "members.csv").write_bytes(b"\xef\xbb\xbfcustomer,branch\r\nann,0\r\nann,3\r\n")
    scenario = load_scenario(write(inside, with_data("members.csv")))
    assert [c.m for c in scenario.constraints.constraints if c.kind == "at_most"] == [2, 2]


def test_only_regular_files_are_read(folders):
    inside, _ = folders
    (inside / "folder.csv").mkdir()
    error = error_of(write(inside, with_data("folder.csv")))
    assert str(error) == ('constraints[1].file: "folder.csv" is a folder, not a regular file (gce reads only '
                          'regular files)')
    if hasattr(os, "mkfifo"):
        os.mkfifo(inside / "pipe.csv")  # examined, never opened (gce.files.paths)
        assert "is a named pipe (FIFO), not a regular file" in error_of(write(inside, with_data("pipe.csv"))).detail
    if os.path.exists("/dev/zero"):
        error = error_of(write(inside, with_data("/dev/zero")), allow_outside_files=True)
        assert "is a device, not a regular file" in error.detail
    missing = error_of(write(inside, with_data("missing.csv")))
    assert missing.field == "constraints[1].file" and missing.detail.startswith('cannot read "missing.csv"')
    nul = error_of(write(inside, with_data("a\\u0000b.csv")))
    assert nul.field == "constraints[1].file" and "NUL" in nul.detail


def test_a_csv_larger_than_the_cap_is_refused(folders, monkeypatch):
    inside, _ = folders
    monkeypatch.setattr(data_module, "MAX_TABLE_BYTES", 10)
    error = error_of(write(inside, with_data("members.csv")))
    assert error.field == "constraints[1].file" and error.detail.startswith("members.csv: is larger than ")
    assert error.detail.endswith(" MiB, the limit for membership tables")


def test_estimate_membership_checks_its_options(tmp_path):
    from gce.constraints import estimate_membership

    for keyword, value in [("patterns", "yes"), ("header", 1), ("label", 3)]:
        with pytest.raises(InvalidParameterError) as info:
            estimate_membership([("a", 0)], 1, **{keyword: value})
        assert info.value.field == keyword


# --- 6. the Python entry points raise the project's errors -------------------------------------------------


@pytest.mark.parametrize("path, detail", [
    (123, "must be a str or os.PathLike, got 123"),
    (None, "must be a str or os.PathLike, got None"),
    (b"s.toml", "must be a str or os.PathLike, got b's.toml'"),
])
def test_load_scenario_names_a_bad_path_argument(path, detail):
    with pytest.raises(InvalidParameterError) as info:
        load_scenario(path)
    assert (info.value.field, info.value.detail) == ("path", detail)


def test_load_scenario_of_missing_files_and_folders(tmp_path):
    for path in (tmp_path / "missing.toml", "missing.toml", tmp_path, "a\x00b.toml"):
        error = error_of(path)
        assert error.field == "file" and error.detail.startswith("cannot read")


def test_scenario_from_dict_checks_its_options():
    table = {"databases": 1, "invocations": [{"databases": 0, "mechanism": {"kind": "pure", "epsilon": 1}}]}
    with pytest.raises(InvalidParameterError) as info:
        scenario_from_dict(table, folder=3)
    assert info.value.field == "folder"
    with pytest.raises(InvalidParameterError) as info:
        scenario_from_dict(table, allow_outside_files="yes")
    assert info.value.field == "allow_outside_files"
    with pytest.raises(InvalidScenarioError, match=r"^scenario: must be a table, got \[1\]"):
        scenario_from_dict([1])


def test_report_from_dict_names_every_bad_field():
    good = solve(load_scenario(ROOT / "examples" / "subsidiaries.toml")).to_dict()
    cases = [
        (None, "data", "must be a mapping (the JSON of Report.to_dict()), got null"),
        ([1], "data", "must be a mapping (the JSON of Report.to_dict()), got [1]"),
        ({}, "data.epsilon", "is missing"),
        ({"epsilon": "x"}, "data.epsilon", 'must be a number >= 0 or "inf", got "x"'),
        ({**good, "epsilon": float("nan")}, "data.epsilon", 'must be a number >= 0 or "inf", got NaN'),
        ({**good, "epsilon": -1}, "data.epsilon", 'must be a number >= 0 or "inf", got -1'),
        ({**good, "delta": 2}, "data.delta", "must be a number in [0, 1], got 2"),
        ({**good, "exact": "yes"}, "data.exact", 'must be true or false, got "yes"'),
        ({k: v for k, v in good.items() if k != "theorem"}, "data.theorem", "is missing"),
        ({**good, "witness": {"h0": [], "h1": [-1]}}, "data.witness.h1[0]", "must be an integer >= 0, got -1"),
        ({**good, "witness": [1]}, "data.witness", 'must be null or {"h0": [...], "h1": [...]}, got [1]'),
        ({**good, "baselines": {"classic": {"epsilon": 1}}}, "data.baselines.classic.delta", "is missing"),
        ({**good, "baselines": {"classic": 3}}, "data.baselines.classic",
         "must be a mapping with epsilon, delta and theorem, got 3"),
        ({**good, "notes": ["ok", 3]}, "data.notes[1]", "must be a string, got 3"),
        ({**good, "differing_count": 1.5}, "data.differing_count", "must be an integer >= 0, got 1.5"),
        ({**good, "lower_bound_epsilon": "big"}, "data.lower_bound_epsilon", 'must be a number >= 0 or "inf", '
                                                                             'got "big"'),
    ]
    for data, field, detail in cases:
        with pytest.raises(InvalidParameterError) as info:
            Report.from_dict(data)
        assert (info.value.field, info.value.detail) == (field, detail), data
    again = Report.from_dict({**good, "epsilon": "inf", "lower_bound_epsilon": None})
    assert again.epsilon == math.inf and Report.from_dict(good).to_dict() == good


def test_a_reloaded_report_cannot_be_plotted_and_says_why():
    from gce.plot import plot_curves

    report = Report.from_dict(solve(load_scenario(ROOT / "examples" / "subsidiaries.toml")).to_dict())
    with pytest.raises(InvalidParameterError) as info:
        plot_curves(report)
    assert info.value.field == "report" and "Report.from_dict" in info.value.detail


# --- 3. text from the file never reaches a terminal as an escape sequence ----------------------------------


HOSTILE = "Bad \x1b]0;owned\x07 title \x1b[2J\x9b31m\x7f\u202e end"


def hostile_file(folder: pathlib.Path) -> pathlib.Path:
    title = json.dumps(HOSTILE)  # a TOML basic string is JSON-compatible for these escapes
    return write(folder, GOOD.replace('title = "t"', f"title = {title}"))


def test_a_hostile_title_is_escaped_in_str_and_kept_in_json(tmp_path):
    report = solve(load_scenario(hostile_file(tmp_path)))
    assert report.title == HOSTILE  # the data is kept as written
    first = str(report).splitlines()[0]
    assert first == "Bad \\x1b]0;owned\\x07 title \\x1b[2J\\x9b31m\\x7f\\u202e end"
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in str(report).replace("\n", ""))
    assert json.loads(json.dumps(report.to_dict()))["title"] == HOSTILE
    assert "\x1b" not in report._repr_html_()


def test_the_cli_escapes_every_line_and_json_stays_faithful(capsys, tmp_path):
    path = str(hostile_file(tmp_path))
    for argv in (["solve", path], ["curve", path, "--deltas", "1e-6"],
                 ["calibrate", path, "--target-epsilon", "1", "--target-delta", "1e-6"]):
        assert main(argv) == 0
        out, err = capsys.readouterr()
        assert out.splitlines()[0] == "Bad \\x1b]0;owned\\x07 title \\x1b[2J\\x9b31m\\x7f\\u202e end", argv
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in out.replace("\n", "")) and err == ""
    assert main(["solve", path, "--json"]) == 0
    out, _ = capsys.readouterr()
    assert "\\u001b]0;owned\\u0007" in out and json.loads(out)["title"] == HOSTILE


def test_a_hostile_data_file_name_is_escaped_in_the_notes(capsys, tmp_path):
    name = "m\x1b[31m.csv"
    (tmp_path / name).write_text("ann,0\nann,1\n")
    path = write(tmp_path, GOOD + '[[constraints]]\nkind = "from_data"\nfile = "m\\u001b[31m.csv"\n')
    assert main(["solve", str(path)]) == 0
    out, _ = capsys.readouterr()
    assert "in m\\x1b[31m.csv;" in out and "\x1b" not in out


def test_a_hostile_file_name_in_an_error_is_escaped(capsys, tmp_path):
    message = one_error_line(capsys, "solve", str(tmp_path / "no\x1b[2Jsuch.toml"))
    assert "no\\x1b[2Jsuch.toml" in message and message.endswith("No such file or directory")


def test_progress_lines_carry_no_foreign_control_characters():
    import io

    from gce.progress import Progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    out = Terminal()
    with Progress(stream=out, label="cal\x1bibrate", min_interval=0) as progress:
        progress(1, 2, "epsilon \x1b[2J0.5\n")
    assert out.getvalue() == "\rcal\\x1bibrate 1/2 (50%) epsilon \\x1b[2J0.5\\x0a\x1b[K\n"


# --- 4. --plot -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("target, detail", [
    ("missing/curve.png", "the folder '{tmp}/missing' does not exist"),
    ("curve.txt", "unsupported image format '.txt' (use .png, .pdf, .svg, .svgz, .eps, .ps, .jpg, .jpeg, .tif, "
                  ".tiff or .webp)"),
    ("curve.xyz", "unsupported image format '.xyz'"),
    (".", "'{tmp}' is a folder; give a file name, e.g. curve.png"),
])
def test_bad_plot_targets_are_refused_before_solving(capsys, tmp_path, target, detail):
    message = one_error_line(capsys, "curve", HOSPITALS, "--plot", str(tmp_path / target))
    assert message.startswith("--plot: " + detail.format(tmp=tmp_path))


def test_a_plot_without_a_suffix_is_a_png_and_the_path_printed_is_the_one_written(capsys, tmp_path, monkeypatch):
    import gce.plot
    from gce.plot import plot_file

    written = []

    def plot_curves(report, path, **options):  # drawing itself is tested in test_plot and test_cli
        written.append(path)
        pathlib.Path(path).write_bytes(b"image")

    monkeypatch.setattr(gce.plot, "plot_curves", plot_curves)
    target = tmp_path / "myplot"
    assert main(["curve", HOSPITALS, "--deltas", "1e-6", "--plot", str(target)]) == 0
    out, _ = capsys.readouterr()
    assert out.splitlines()[-1] == f"plot written to {target}.png"
    assert written == [tmp_path / "myplot.png"] and (tmp_path / "myplot.png").exists() and not target.exists()
    assert main(["curve", HOSPITALS, "--deltas", "1e-6", "--plot", str(tmp_path / "c.PDF"), "--json"]) == 0
    assert json.loads(capsys.readouterr()[0])["plot"] == str(tmp_path / "c.PDF")
    (tmp_path / "a.b").mkdir()
    assert plot_file(tmp_path / "a.b" / "curve") == tmp_path / "a.b" / "curve.png"
    assert str(plot_file(tmp_path / "x.svg")) == str(tmp_path / "x.svg")
    with pytest.raises(InvalidParameterError, match="^path: must be a str or os.PathLike, got 3"):
        plot_file(3)


# --- 5. numbers on the command line ----------------------------------------------------------------------


@pytest.mark.parametrize("argv, message", [
    (["solve", HOSPITALS, "--time-limit", "inf"], "--time-limit: must be a finite number of seconds > 0, got inf"),
    (["solve", HOSPITALS, "--time-limit", "nan"], "--time-limit: must be a finite number of seconds > 0, got nan"),
    (["solve", HOSPITALS, "--time-limit", "-1"], "--time-limit: must be a finite number of seconds > 0, got -1.0"),
    (["solve", HOSPITALS, "--time-limit", "0"], "--time-limit: must be a finite number of seconds > 0, got 0.0"),
    (["solve", HOSPITALS, "--time-limit", "1e308"],
     "--time-limit: must be at most 1e+06 seconds (about 11.6 days), got 1e+308"),
    (["calibrate", HOSPITALS, "--target-epsilon", "1", "--target-delta", "1e-6", "--time-limit", "1e999"],
     "--time-limit: must be a finite number of seconds > 0, got inf"),
    (["curve", HOSPITALS, "--time-limit", "2e6"], "--time-limit: must be at most 1e+06 seconds"),
    (["solve", HOSPITALS, "--delta", "nan"], "--delta: must lie in [0, 1), got nan"),
    (["solve", HOSPITALS, "--delta", "inf"], "--delta: must lie in [0, 1), got inf"),
    (["solve", HOSPITALS, "--epsilon", "nan"], "--epsilon: must be finite and >= 0, got nan"),
    (["solve", HOSPITALS, "--epsilon", "inf"], "--epsilon: must be finite and >= 0, got inf"),
    (["solve", HOSPITALS, "--epsilon", "-0.5"], "--epsilon: must be finite and >= 0, got -0.5"),
    (["calibrate", HOSPITALS, "--target-epsilon", "nan", "--target-delta", "1e-6"],
     "--target-epsilon: must be finite and > 0, got nan"),
    (["calibrate", HOSPITALS, "--target-epsilon", "0", "--target-delta", "1e-6"],
     "--target-epsilon: must be finite and > 0, got 0.0"),
    (["calibrate", HOSPITALS, "--target-epsilon", "inf", "--target-delta", "1e-6"],
     "--target-epsilon: must be finite and > 0, got inf"),
    (["calibrate", HOSPITALS, "--target-epsilon", "1", "--target-delta", "nan"],
     "--target-delta: must lie in [0, 1), got nan"),
    (["calibrate", HOSPITALS, "--target-epsilon", "1", "--target-delta", "1"],
     "--target-delta: must lie in [0, 1), got 1.0"),
    (["curve", HOSPITALS, "--deltas", "1e-6", "nan"], "--deltas[1]: must lie in [0, 1), got nan"),
    (["curve", HOSPITALS, "--deltas", "-inf"], "--deltas[0]: must lie in [0, 1), got -inf"),
    (["curve", HOSPITALS, "--deltas", "1e-6", "-1e-3"], "--deltas[1]: must lie in [0, 1), got -0.001"),
    (["solve", HOSPITALS, "--delta", "-1E-3"], "--delta: must lie in [0, 1), got -0.001"),
    (["solve", HOSPITALS, "--epsilon", "-.5"], "--epsilon: must be finite and >= 0, got -0.5"),
    (["solve", HOSPITALS, "--time-limit", "-Infinity"], "--time-limit: must be a finite number of seconds > 0, "
                                                        "got -inf"),
])
def test_numeric_flags_are_checked_and_named(capsys, argv, message):
    assert one_error_line(capsys, *argv).startswith(message)


def test_flags_are_checked_before_the_file_is_read(capsys, tmp_path):
    # The flag is named even when the file is bad: nothing is read before the command line is valid.
    assert one_error_line(capsys, "solve", str(tmp_path / "missing.toml"), "--time-limit", "nan").startswith(
        "--time-limit:")


# --- the CLI end to end ----------------------------------------------------------------------------------


def test_allow_outside_files_on_the_command_line(capsys, folders):
    inside, outside = folders
    path = str(write(inside, with_data(str(outside / "members.csv"))))
    for command in (["solve", path], ["curve", path, "--deltas", "1e-6"],
                    ["calibrate", path, "--target-epsilon", "1", "--target-delta", "1e-6"]):
        message = one_error_line(capsys, *command)
        assert message.startswith(f"{path}: constraints[1].file: ") and "--allow-outside-files" in message
        assert main([*command, "--allow-outside-files"]) == 0
        out, err = capsys.readouterr()
        assert "at_most 3 estimated from data" in out and err == ""


@pytest.mark.parametrize("text, field", [
    (GOOD.replace("databases = 4", "databases = 1000000000"), "databases: must be a count in 1..10,000,000"),
    (GOOD.replace("m = 2", "m = true"), "constraints[0].m: must be an integer, got true"),
    (GOOD.replace("delta = 1e-9", "delta = 1e-999"), "invocations[0].mechanism.delta: is too small"),
    (b"\xef\xbb\xbf" + GOOD.replace("m = 2", "m = -2").encode(), "constraints[0].m: must be an integer >= 0"),
    ("a = " + "{b = " * 5000 + "1" + "}" * 5000, "file: "),
])
def test_file_errors_are_one_line_naming_the_field(capsys, tmp_path, text, field):
    path = write(tmp_path, text)
    assert one_error_line(capsys, "solve", str(path)).startswith(f"{path}: {field}")


@pytest.mark.slow  # a fresh interpreter; test_dev_zero_is_refused_and_an_endless_pipe_... is its fast twin
@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_the_installed_command_refuses_dev_zero():
    done = subprocess.run([sys.executable, "-m", "gce", "solve", "/dev/zero"], capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("gce: error: /dev/zero: file: cannot read '/dev/zero': is a device, not a regular file "
                           "(gce reads only regular files)\n")


def test_a_toml_error_quoting_a_long_key_is_cut_short(tmp_path):
    key = "k" * 5000
    error = error_of(write(tmp_path, f"[{key}]\n[{key}]\n"))
    assert error.field == "file" and len(str(error)) < 300
    assert error.detail.endswith("kkk... (at line 2, column 5002)")


def test_plot_helpers_name_bad_arguments():
    from gce.plot import classic_curve, curve_table

    with pytest.raises(InvalidParameterError, match="^scenario: must be a Scenario, got NoneType"):
        classic_curve(None)
    with pytest.raises(InvalidParameterError, match="^curve: must be a PrivacyCurve"):
        curve_table(None, None, [1e-6])
    curve = solve(load_scenario(ROOT / "examples" / "subsidiaries.toml")).curve
    with pytest.raises(InvalidParameterError, match="^classic_curve: must be a PrivacyCurve"):
        curve_table(curve, "classic", [1e-6])
    with pytest.raises(InvalidParameterError, match="^deltas: must be a non-empty list"):
        curve_table(curve, None, ["x"])


def test_plot_problems_found_late_or_early_name_the_flag(capsys, tmp_path, monkeypatch):
    import importlib.util

    import gce.plot

    (tmp_path / "file").write_text("")
    message = one_error_line(capsys, "curve", HOSPITALS, "--plot", str(tmp_path / "file" / "c.png"))
    assert message == f"--plot: {str(tmp_path / 'file')!r} is not a folder"

    def unwritable(report, path, **options):
        raise InvalidParameterError("path", f"cannot write {str(path)!r}: Permission denied")

    monkeypatch.setattr(gce.plot, "plot_curves", unwritable)
    message = one_error_line(capsys, "curve", HOSPITALS, "--deltas", "1e-6", "--plot", str(tmp_path / "c.png"))
    assert message == f"--plot: cannot write {str(tmp_path / 'c.png')!r}: Permission denied"
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else
                        find_spec(name, *a))
    message = one_error_line(capsys, "curve", HOSPITALS, "--plot", str(tmp_path / "c.png"))
    assert message == "--plot: install the plot extra: pip install 'gce[plot]'"


def test_prior_fields_show_toml_values(tmp_path):
    import gce
    path = tmp_path / "prior.toml"
    path.write_text('databases = 3\ndelta = 1e-6\n[[invocations]]\ndatabases = "all"\n'
                    'mechanism = { kind = "pure", epsilon = 0.1 }\n[hypotheses]\n'
                    'h0 = { kind = "point", members = [true] }\nh1 = { kind = "point", members = [1] }\n')
    with pytest.raises(gce.errors.InvalidScenarioError, match=r"hypotheses\.h0\.members\[0\]: .*got true$"):
        gce.load_scenario(path)


def test_calibration_text_escapes_control_characters():
    import gce
    s = gce.Scenario(databases=2, invocations=[gce.Invocation(0, gce.PureDP(0.1))], title="x\x1b[31mred", delta=1e-6)
    text = str(gce.calibrate(s, target_epsilon=1.0, target_delta=1e-6))
    assert "\x1b" not in text and text.splitlines()[0] == "x\\x1b[31mred"
