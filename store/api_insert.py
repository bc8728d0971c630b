"""The rows of a new API request, written in its create's transaction: its run, its request,
the request's approvers and its link to the key (store/api.py audits them after).

On PostgreSQL the four inserts are one statement (data-modifying CTEs, the records coming back
with `RETURNING`): one round trip where there were four, on the hot path of `POST
/v1/requests`. The foreign keys hold (PostgreSQL checks them once the statement ends). On
SQLite, which has no data-modifying CTEs, they are four statements in the same transaction.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncConnection

from store.schema import api_requests as link
from store.schema import approval_requests as req
from store.schema import request_approvers as ra
from store.schema import runs


@dataclass(frozen=True)
class NewRows:
    """The values of each row (column name to value) and the approvers."""

    run: dict[str, Any]
    request: dict[str, Any]
    link: dict[str, Any]
    principals: list[str]


@dataclass(frozen=True)
class Written:
    """A row written, as `store.runs.run_record` and `store.requests.request_record` read it."""

    _mapping: dict[str, Any]


_INSERT_RUN = runs.insert().returning(*runs.c)  # built once: the records come back with them
_INSERT_REQUEST = req.insert().returning(*req.c)
_INSERT_APPROVER = ra.insert()
_INSERT_LINK = link.insert()


def _typed(table: sa.Table, columns: tuple[str, ...], prefix: str) -> dict[str, Any]:
    return {c: sa.bindparam(prefix + c, type_=table.c[c].type) for c in columns}


@functools.cache
def _one_statement(
    run_columns: tuple[str, ...], request_columns: tuple[str, ...], link_columns: tuple[str, ...]
) -> sa.Select[Any]:
    """The four inserts in one statement (PostgreSQL), returning the run and the request."""
    new_run = (
        runs.insert().values(_typed(runs, run_columns, "r_")).returning(*runs.c).cte("new_run")
    )
    new_request = (
        req.insert().values(_typed(req, request_columns, "q_")).returning(*req.c).cte("new_request")
    )
    principals = sa.bindparam("a_principals", type_=postgresql.ARRAY(ra.c.principal.type))
    approvers = ra.insert().from_select(
        ["request_id", "principal"], sa.select(new_request.c.id, sa.func.unnest(principals))
    )
    others = [c for c in link_columns if c != "request_id"]
    linked = link.insert().from_select(
        ["request_id", *others],
        sa.select(new_request.c.id, *_typed(link, tuple(others), "l_").values()),
    )
    return (
        sa.select(
            *(new_run.c[c].label("r_" + c) for c in runs.c.keys()),
            *(new_request.c[c].label("q_" + c) for c in req.c.keys()),
        )
        .select_from(new_run.join(new_request, sa.true()))
        .add_cte(approvers.cte("new_approvers"), linked.cte("new_link"))
    )


async def insert_rows(conn: AsyncConnection, rows: NewRows) -> tuple[Written, Written]:
    """Write the rows; the run's and the request's as the database has them."""
    if conn.dialect.name == "postgresql":
        statement = _one_statement(tuple(rows.run), tuple(rows.request), tuple(rows.link))
        params = {
            **{"r_" + c: v for c, v in rows.run.items()},
            **{"q_" + c: v for c, v in rows.request.items()},
            **{"l_" + c: v for c, v in rows.link.items() if c != "request_id"},
            "a_principals": rows.principals,
        }
        m = (await conn.execute(statement, params)).one()._mapping
        run = {c: m["r_" + c] for c in runs.c.keys()}
        return Written(run), Written({c: m["q_" + c] for c in req.c.keys()})
    run_row = (await conn.execute(_INSERT_RUN, rows.run)).one()
    request_row = (await conn.execute(_INSERT_REQUEST, rows.request)).one()
    request_id = rows.request["id"]
    await conn.execute(
        _INSERT_APPROVER, [{"request_id": request_id, "principal": p} for p in rows.principals]
    )
    await conn.execute(_INSERT_LINK, rows.link)
    return Written(dict(run_row._mapping)), Written(dict(request_row._mapping))
