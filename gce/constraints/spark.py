"""Membership statistics computed by Spark, where the logs live (001, Sec. V-A: the store chain, beyond one machine).

:mod:`gce.constraints.tables` computes the statistics of a membership table with DuckDB on one machine. A
curator whose logs (patient x hospital visits, customer x branch purchases) live in a cluster computes the
same :class:`~gce.constraints.tables.MembershipStatistics` there: :func:`membership_statistics` takes a Spark
DataFrame, a table of Spark's catalog or files Spark reads, and runs the SQL of
:func:`gce.constraints.tables.per_individual_sql` and :func:`gce.constraints.tables.statistics_from_sql` (the
text DuckDB runs) in Spark SQL; only the histogram (and the membership sets, when asked) come back to Python.
The result goes to gce as any other: ``statistics.estimate()`` gives the ``at_most`` (and ``patterns``)
constraints, :func:`gce.membership.membership_coverage` the candidate m, and ``statistics.to_dict()`` /
:meth:`~gce.constraints.tables.MembershipStatistics.from_dict` carry it as JSON to another machine.

pyspark is the optional extra ``gce[spark]`` (it needs Java 17 or later), imported on first use.

What must never change: for the same rows and database ids, the statistics equal those of
:func:`gce.constraints.tables.membership_statistics`: ``histogram[c]`` is exactly the number of individuals
in ``c`` distinct known databases (duplicated rows count once), ``rows`` counts every row, a null individual
or an unknown or null database is an error naming the table and quoting the value, and more than
``max_patterns`` distinct membership sets is an error.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from ..errors import GCEError, InvalidParameterError
from ..validation import is_integer, renamed_keywords, shown
from .data import DatabaseIds, _Resolver
from .tables import (MAX_PATTERNS, MembershipStatistics, id_columns, per_individual_sql, rows_sql,
                     statistics_from_sql, table_format)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["INSTALL_HINT", "SparkUnavailableError", "membership_statistics"]

#: What to tell a user without pyspark.
INSTALL_HINT = "install the spark extra: pip install 'gce[spark]' (Spark needs Java 17 or later)"
#: How many characters of an engine message an error quotes.
_SHOWN = 300


class SparkUnavailableError(GCEError, ImportError):
    """pyspark is not installed (it is the optional ``spark`` extra)."""


def _pyspark() -> Any:
    """The ``pyspark.sql`` module, imported on first use, or :class:`SparkUnavailableError`."""
    try:
        import pyspark.sql
        import pyspark.sql.functions
        import pyspark.sql.types
    except ImportError:
        raise SparkUnavailableError(INSTALL_HINT) from None
    return pyspark.sql


def _column(name: str) -> str:
    """A column reference Spark reads literally (dots and spaces included)."""
    return "`" + name.replace("`", "``") + "`"


def _engine_error(label: str, error: Exception) -> InvalidParameterError:
    """A Spark failure as the project's error naming the table: the first line of what Spark said."""
    text = str(error).strip()
    java = getattr(error, "java_exception", None)  # py4j's Py4JJavaError: the JVM's own message
    if java is not None:
        try:
            text = str(java.toString()).strip()
        except Exception:  # pragma: no cover - the JVM is gone
            pass
    first = text.splitlines()[0] if text else type(error).__name__
    return InvalidParameterError(label, f"cannot be read by Spark: {first[:_SHOWN]}")


def _errors() -> tuple[type[Exception], ...]:
    """The exceptions a Spark query raises: pyspark's own, and py4j's for the JVM's uncaptured ones."""
    from pyspark.errors import PySparkException

    found: list[type[Exception]] = [PySparkException]
    try:
        from py4j.protocol import Py4JError

        found.append(Py4JError)
    except ImportError:  # pragma: no cover - Spark Connect without py4j
        pass
    return tuple(found)


def _session(session: SparkSession | None) -> SparkSession:
    sql = _pyspark()
    if session is not None:
        if not isinstance(session, sql.SparkSession):
            raise InvalidParameterError("session", f"must be a SparkSession, got {type(session).__name__}")
        return session
    active = sql.SparkSession.getActiveSession()
    if active is None:
        raise InvalidParameterError("session", "no active SparkSession: start one (SparkSession.builder ... "
                                               "getOrCreate()) or pass session=")
    return active


def _read(source: DataFrame | str, session: SparkSession | None, format: str | None) -> tuple[DataFrame, bool, str]:
    """The DataFrame of ``source``, whether Spark read it from files, and the file format (``""`` if none)."""
    sql = _pyspark()
    if isinstance(source, sql.DataFrame):
        if format is not None:
            raise InvalidParameterError("format", "is for a path; a DataFrame is read as it is")
        return source, False, ""
    if not isinstance(source, str) or not source.strip():
        got = shown(source, 200) if isinstance(source, str) else type(source).__name__
        raise InvalidParameterError("table", f"must be a Spark DataFrame, a table name or a path, got {got}")
    spark = _session(session)
    kind = format if format is not None else table_format(source)
    if kind is None and "/" not in source:
        return spark.table(source), False, ""
    reader = spark.read if kind is None else spark.read.format(kind)
    if kind == "csv":
        reader = reader.option("header", "true")
    return reader.load(source), True, kind or ""


def _file_path(frame: DataFrame) -> Any:
    """The column of each row's file (Spark's hidden ``_metadata`` of file sources), or None for a source with
    no files (a JDBC table, say)."""
    from pyspark.errors import PySparkException
    from pyspark.sql import functions

    column = functions.col("_metadata.file_path")
    try:
        frame.select(column).schema  # analysed now: a source without files has no _metadata
    except PySparkException:
        return None
    return column


@renamed_keywords(source="table")
def membership_statistics(table: DataFrame | str, databases: DatabaseIds, *,
                          columns: tuple[str, str] | None = None, patterns: bool = False,
                          max_patterns: int = MAX_PATTERNS, session: SparkSession | None = None,
                          format: str | None = None, label: str | None = None) -> MembershipStatistics:
    """The histogram of memberships per individual (and the distinct sets when asked), computed by Spark.

    The same statistics, errors and SQL as :func:`gce.constraints.tables.membership_statistics` (DuckDB),
    run as Spark jobs: one scan of the table and two aggregations in the cluster, a few numbers back.

    Parameters
    ----------
    table : pyspark.sql.DataFrame or str
        (``source=``, its former name, still works and warns.) A DataFrame; or a string: a path Spark reads when it has a CSV or Parquet suffix, contains ``/`` (a
        folder of part files, a glob, ``s3a://...``) or ``format`` is given, else a table of Spark's catalog.
        CSV files have a header row; their cells are trimmed and empty cells are nulls (as with DuckDB).
    databases : int, Databases, sequence of str or mapping
        How database ids resolve to indices, as in :func:`gce.constraints.data.estimate_membership`. An
        integer database column is matched by value, any other by its trimmed text.
    columns : (str, str), optional
        The individual and database columns; default the table's two columns (more is an error).
    patterns : bool
        Also count the distinct membership sets (at most ``max_patterns``, else an error).
    session : SparkSession, optional
        For a table name or path; default the active session. A DataFrame brings its own.
    format : str, optional
        Spark's data source for a path (``"parquet"``, ``"csv"``, ``"orc"``, ``"json"``, ...); default by suffix.
    label : str, optional
        How errors and statements name the table; default the string given, or ``"DataFrame"``.

    Returns
    -------
    MembershipStatistics
        Equal to DuckDB's for the same rows: pass ``.estimate()`` to a scenario, or the statistics to
        :func:`gce.membership.membership_coverage`.

    Raises
    ------
    SparkUnavailableError
        pyspark is not installed (:data:`INSTALL_HINT`).
    InvalidParameterError
        Naming the table (and the file, for files Spark read): unreadable, a missing column, a row without an
        individual, an unknown or missing database (the value is quoted), no rows, or more than
        ``max_patterns`` distinct sets; an option of the wrong type.

    References
    ----------
    001, Sec. V-A, "General case" (the store chain: the bound estimated from the data).
    """
    if not isinstance(patterns, bool):
        raise InvalidParameterError("patterns", f"must be True or False, got {shown(patterns)}")
    if not is_integer(max_patterns) or max_patterns < 1:
        raise InvalidParameterError("max_patterns", f"must be an integer >= 1, got {shown(max_patterns)}")
    if columns is not None and (isinstance(columns, str) or len(columns) != 2
                                or not all(isinstance(c, str) and c for c in columns)):
        raise InvalidParameterError("columns", f"must be two column names (individual, database), got {shown(columns)}")
    if label is not None and (not isinstance(label, str) or not label):
        raise InvalidParameterError("label", f"must be a non-empty string, got {shown(label)}")
    if format is not None and (not isinstance(format, str) or not format.isidentifier()):
        raise InvalidParameterError("format", f"must be the name of a Spark data source, got {shown(format)}")
    resolve = _Resolver(databases, text=True)
    sql = _pyspark()
    name = label or (table if isinstance(table, str) else "DataFrame")
    try:
        return _statistics(sql, table, resolve, columns, patterns, max_patterns, session, format, name)
    except _errors() as error:
        raise _engine_error(name, error) from None


def _statistics(sql: Any, source: DataFrame | str, resolve: _Resolver, columns: tuple[str, str] | None,
                patterns: bool, max_patterns: int, session: SparkSession | None, format: str | None,
                name: str) -> MembershipStatistics:
    functions, types = sql.functions, sql.types
    frame, from_files, kind = _read(source, session, format)
    spark = frame.sparkSession
    present = list(frame.columns)
    if columns is None:
        if len(present) != 2:
            raise InvalidParameterError(name, f"has {len(present)} column{'s' if len(present) != 1 else ''} "
                                              f"({', '.join(present[:5])}); name the two to read with columns = "
                                              f"(individual, database)")
        columns = (present[0], present[1])
    for wanted in columns:
        if wanted not in present:
            raise InvalidParameterError("columns", f"{name} has no column {shown(wanted)} (it has "
                                                   f"{', '.join(present[:10])})")
    individual, database = (functions.col(_column(c)) for c in columns)
    if kind == "csv":  # as DuckDB reads a CSV: cells trimmed, an empty cell is null
        individual, database = (functions.expr(f"nullif(trim({_column(c)}), '')") for c in columns)
    origin = _file_path(frame) if from_files else None
    origin = functions.lit(name) if origin is None else origin
    raw = frame.select(individual.alias("individual"), database.alias("database"), origin.alias("origin"))
    integer = isinstance(raw.schema["database"].dataType, types.IntegralType)
    keys, nums, indices = id_columns(resolve)
    ids = spark.createDataFrame(list(zip(keys, nums, indices)), "id string, num bigint, idx int")
    tag = uuid.uuid4().hex
    views = {part: f"gce_{part}_{tag}" for part in ("raw", "ids", "rows", "per")}
    per = None
    try:
        raw.createOrReplaceTempView(views["raw"])
        ids.createOrReplaceTempView(views["ids"])
        spark.sql(rows_sql(views["raw"], views["ids"], integer)).createOrReplaceTempView(views["rows"])
        per = spark.sql(per_individual_sql(views["rows"], patterns))
        if patterns:  # read more than once: kept rather than computed again from the table
            from pyspark import StorageLevel

            per = per.persist(StorageLevel.MEMORY_AND_DISK)
        per.createOrReplaceTempView(views["per"])

        def run(query: str) -> list[tuple]:
            return [tuple(row) for row in spark.sql(query).collect()]

        def where(found: object) -> str:
            return name if found is None or found == name else f"{name} ({found})"

        return statistics_from_sql(run, views["rows"], views["per"], name=name, where=where, resolve=resolve,
                                   patterns=patterns, max_patterns=max_patterns)
    finally:
        if per is not None and patterns:
            per.unpersist()
        for view in views.values():
            spark.catalog.dropTempView(view)
