"""Runs: started (`start`), handed to workers (`handoff`), driven under a lease (`drive`),
shown where they stop (`present`), and the background tasks that carry them (`tasks`)."""
