"""The allow-lists of query_mysql: which syntax nodes, functions and types a statement may contain.

Everything not listed here is refused with its name. The lists name pure, bounded operations only: nothing that
sleeps, reads or writes files, opens connections, takes locks, touches other sessions, reads server state or runs
SQL text. Functions sqlglot knows are listed by their typed node (sqlglot renders them to the equivalent function of
each backend); functions it does not know arrive as `Anonymous` calls that are sent as written, so they are listed
by name per backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

from sqlglot import exp

Backend = Literal["sqlite", "postgres", "mysql"]

# ---- syntax -----------------------------------------------------------------------------------------------------

STATEMENT_NODES: tuple[type[exp.Expression], ...] = (
    exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Subquery, exp.CTE, exp.With, exp.From, exp.Join, exp.Where,
    exp.Group, exp.Having, exp.Order, exp.Ordered, exp.Limit, exp.Offset, exp.Fetch, exp.Distinct, exp.Qualify,
    exp.Window, exp.WindowSpec, exp.Filter, exp.Rollup, exp.Values, exp.Lateral, exp.LimitOptions,
)
REFERENCE_NODES: tuple[type[exp.Expression], ...] = (
    exp.Column, exp.Table, exp.TableAlias, exp.Alias, exp.Identifier, exp.Star, exp.Dot,
)
VALUE_NODES: tuple[type[exp.Expression], ...] = (
    exp.Literal, exp.Boolean, exp.Null, exp.Paren, exp.Tuple, exp.Interval, exp.DataType, exp.DataTypeParam,
    exp.HexString, exp.BitString, exp.National, exp.Introducer, exp.Collate, exp.Escape, exp.AtTimeZone,
    exp.JSONPath, exp.JSONPathRoot, exp.JSONPathKey, exp.JSONPathSubscript, exp.JSONPathWildcard,
)
OPERATOR_NODES: tuple[type[exp.Expression], ...] = (
    exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod, exp.Neg, exp.DPipe,
    exp.EQ, exp.NEQ, exp.NullSafeEQ, exp.NullSafeNEQ, exp.GT, exp.GTE, exp.LT, exp.LTE,
    exp.And, exp.Or, exp.Xor, exp.Not, exp.Is, exp.In, exp.Between, exp.Like, exp.ILike, exp.Exists, exp.Any, exp.All,
    exp.BitwiseAnd, exp.BitwiseOr, exp.BitwiseXor, exp.BitwiseNot, exp.BitwiseLeftShift, exp.BitwiseRightShift,
)
ALLOWED_NODES: tuple[type[exp.Expression], ...] = STATEMENT_NODES + REFERENCE_NODES + VALUE_NODES + OPERATOR_NODES

# A bare keyword (Var) is allowed only where it is a unit, a charset or a collation name.
VAR_PARENTS: tuple[type[exp.Expression], ...] = (
    exp.Interval, exp.Extract, exp.TimestampDiff, exp.TimestampAdd, exp.DateAdd, exp.DateSub, exp.DateTrunc,
    exp.TimestampTrunc, exp.Collate, exp.Cast, exp.DataType, exp.Chr, exp.DateDiff,
)

# ---- functions sqlglot knows (rendered by sqlglot for each backend) ----------------------------------------------

AGGREGATES: tuple[type[exp.Func], ...] = (
    exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max, exp.GroupConcat, exp.Stddev, exp.StddevPop, exp.StddevSamp,
    exp.Variance, exp.VariancePop, exp.BitwiseAndAgg, exp.BitwiseOrAgg, exp.BitwiseXorAgg, exp.AnyValue,
    exp.CountIf, exp.JSONObjectAgg, exp.ArrayAgg,
)
WINDOW_FUNCTIONS: tuple[type[exp.Func], ...] = (
    exp.RowNumber, exp.Rank, exp.DenseRank, exp.PercentRank, exp.CumeDist, exp.Ntile, exp.Lag, exp.Lead,
    exp.FirstValue, exp.LastValue, exp.NthValue,
)
CONDITIONALS: tuple[type[exp.Func], ...] = (
    exp.Case, exp.If, exp.Coalesce, exp.Nullif, exp.Greatest, exp.Least, exp.Cast, exp.TryCast,
)
STRING_FUNCTIONS: tuple[type[exp.Func], ...] = (
    exp.Concat, exp.ConcatWs, exp.Length, exp.Lower, exp.Upper, exp.Substring, exp.Left, exp.Right, exp.Trim,
    exp.Replace, exp.StrPosition, exp.Reverse, exp.Pad, exp.Ascii, exp.Hex, exp.Unhex, exp.MD5, exp.SHA, exp.SHA2,
    exp.ToBase64, exp.FromBase64, exp.RegexpReplace, exp.RegexpSubstr, exp.RegexpInstr, exp.RegexpLike,
    exp.SubstringIndex, exp.Elt, exp.Chr, exp.Initcap, exp.MatchAgainst,
)
DATE_FUNCTIONS: tuple[type[exp.Func], ...] = (
    exp.CurrentTimestamp, exp.CurrentDate, exp.CurrentTime, exp.UtcTimestamp, exp.UtcDate, exp.Localtime,
    exp.Localtimestamp, exp.TsOrDsToDate, exp.TsOrDsToTimestamp, exp.Time, exp.DateSub, exp.DateAdd, exp.DateDiff,
    exp.TimestampDiff, exp.TimestampAdd, exp.TimeToStr, exp.StrToDate, exp.StrToTime, exp.UnixToTime,
    exp.TimeToUnix, exp.StrToUnix, exp.Extract, exp.Year, exp.Month, exp.Day, exp.DayOfMonth, exp.Hour,
    exp.Minute, exp.Second, exp.DayOfWeek, exp.DayOfYear, exp.Week, exp.Quarter, exp.LastDay, exp.DateTrunc,
    exp.TimestampTrunc, exp.Datetime, exp.Timestamp, exp.Dayname, exp.ConvertTimezone, exp.ToChar, exp.Date,
)
MATH_FUNCTIONS: tuple[type[exp.Func], ...] = (
    exp.Abs, exp.Ceil, exp.Floor, exp.Round, exp.Trunc, exp.Pow, exp.Sqrt, exp.Exp, exp.Ln, exp.Log, exp.Sign,
    exp.Pi, exp.Rand, exp.Degrees, exp.Radians, exp.Sin, exp.Cos, exp.Tan, exp.Asin, exp.Acos, exp.Atan, exp.Atan2,
    exp.Cot,
)
JSON_FUNCTIONS: tuple[type[exp.Func], ...] = (
    exp.JSONExtract, exp.JSONExtractScalar, exp.JSONKeys, exp.JSONType, exp.JSONObject, exp.JSONBExtract,
    exp.JSONBExtractScalar, exp.JSONArray, exp.JSONValueArray,
)
ALLOWED_FUNCTIONS: frozenset[type[exp.Func]] = frozenset(
    AGGREGATES + WINDOW_FUNCTIONS + CONDITIONALS + STRING_FUNCTIONS + DATE_FUNCTIONS + MATH_FUNCTIONS + JSON_FUNCTIONS
)

# ---- functions sqlglot does not know: sent as written, so allowed by name for each backend -----------------------

_COMMON_ANONYMOUS = frozenset({
    "NOW", "SYSDATE", "OCTET_LENGTH", "MID", "STRCMP", "ORD", "FIELD", "FIND_IN_SET", "QUOTE", "BIN", "OCT", "CONV",
    "SUBDATE", "ADDDATE", "UNIX_TIMESTAMP", "WEEKDAY", "TIMEDIFF", "TIME_TO_SEC", "SEC_TO_TIME", "MAKEDATE",
    "YEARWEEK", "MICROSECOND", "PERIOD_DIFF", "JSON_UNQUOTE", "JSON_LENGTH", "JSON_CONTAINS", "JSON_VALID",
    "JSON_ARRAY", "JSON_ARRAYAGG", "JSON_SEARCH", "JSON_CONTAINS_PATH", "JSON_DEPTH", "JSON_QUOTE", "CHAR_LENGTH",
    "LOG2", "LOG10", "CEILING", "POSITION", "BIT_LENGTH", "LCASE", "UCASE", "DATE_FORMAT", "FROM_DAYS", "TO_DAYS",
    "TO_SECONDS", "MONTHNAME", "DAYNAME", "WEEKOFYEAR", "UTC_TIME", "CURTIME", "CURDATE", "TRUNCATE", "MOD",
    "JSON_OBJECT", "JSON_VALUE",
})
ANONYMOUS_BY_BACKEND: Mapping[Backend, frozenset[str]] = MappingProxyType({
    "mysql": _COMMON_ANONYMOUS,
    "postgres": _COMMON_ANONYMOUS | frozenset({
        "TO_CHAR", "TO_DATE", "TO_TIMESTAMP", "DATE_PART", "AGE", "JUSTIFY_HOURS", "JUSTIFY_DAYS", "STRING_AGG",
        "JSONB_EXTRACT_PATH", "JSONB_EXTRACT_PATH_TEXT", "JSON_EXTRACT_PATH", "JSON_EXTRACT_PATH_TEXT",
        "JSONB_TYPEOF", "JSON_TYPEOF", "JSONB_ARRAY_LENGTH", "JSON_ARRAY_LENGTH", "SPLIT_PART", "BTRIM", "INITCAP",
        "STRPOS", "CHR", "ENCODE", "DECODE", "SHA256", "MAKE_INTERVAL", "BOOL_AND", "BOOL_OR", "EVERY",
        "WIDTH_BUCKET", "CBRT", "DIV", "NUM_NULLS", "NUM_NONNULLS", "CLOCK_TIMESTAMP", "STATEMENT_TIMESTAMP",
        "TRANSACTION_TIMESTAMP", "DATE_BIN", "ISFINITE", "TRUNC",
    }),
    "sqlite": _COMMON_ANONYMOUS | frozenset({
        "STRFTIME", "JULIANDAY", "DATETIME", "DATE", "TIME", "UNIXEPOCH", "IIF", "INSTR", "SUBSTR", "TYPEOF",
        "TOTAL", "IFNULL", "JSON_EXTRACT", "JSON_TYPE", "JSON_ARRAY_LENGTH", "JSON_GROUP_ARRAY", "JSON_GROUP_OBJECT",
        "JSON_QUOTE", "LIKELY", "UNLIKELY", "NULLIF", "UNICODE", "CHAR", "GLOB",
    }),
})

# ---- types a CAST may name ---------------------------------------------------------------------------------------

_T = exp.DataType.Type
ALLOWED_TYPES: frozenset[object] = frozenset({
    _T.CHAR, _T.NCHAR, _T.VARCHAR, _T.NVARCHAR, _T.TEXT, _T.MEDIUMTEXT, _T.LONGTEXT, _T.TINYTEXT,
    _T.INT, _T.TINYINT, _T.SMALLINT, _T.MEDIUMINT, _T.BIGINT, _T.UINT, _T.UTINYINT, _T.USMALLINT, _T.UMEDIUMINT,
    _T.UBIGINT, _T.DECIMAL, _T.UDECIMAL, _T.FLOAT, _T.DOUBLE, _T.BOOLEAN, _T.DATE, _T.DATETIME, _T.TIMESTAMP,
    _T.TIMESTAMPTZ, _T.TIME, _T.JSON, _T.BINARY, _T.VARBINARY, _T.INTERVAL, _T.YEAR, _T.BIT,
})

# ---- bounded arguments: amplifying functions must get a small literal size --------------------------------------

MAX_PAD_LENGTH = 1000
