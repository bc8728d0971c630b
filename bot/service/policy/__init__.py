"""Approval policy: the rules a call is evaluated under (`rules`), the policy in force
(`effective`: the code's settings overridden by the file), the policy file (`file`) and the
report people read (`report`)."""
