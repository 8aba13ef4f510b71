"""Behaviour under a policy: what the recorded actions say about the agent's view (issue 24, measured part).

Replay holds the actions fixed; this package asks which of them the policy's view would have explained: calls
that repeat an identical earlier call whose result the view hid (``blind_repeats``), and loop episodes (cycles of
identical calls) with the share the policy hides. No prediction of what the agent would do instead."""
