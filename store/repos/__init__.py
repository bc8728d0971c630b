"""The store's repositories: one small class per idea, each on the store's database.

`Store` (store/store.py) holds one of each: `store.runs`, `store.requests`,
`store.standing`, `store.audit`, `store.api`. The SQL lives in the modules beside them
(store/runs.py, store/requests.py, ...); a repository is what the rest of sayso calls.
"""

from store.repos.api import ApiRepository
from store.repos.audit import AuditRepository
from store.repos.requests import RequestRepository
from store.repos.runs import RunRepository
from store.repos.standing import StandingRepository

__all__ = [
    "ApiRepository",
    "AuditRepository",
    "RequestRepository",
    "RunRepository",
    "StandingRepository",
]
