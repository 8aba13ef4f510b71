"""The harness's own policy as the log records it: its compactions and condensations take effect at the recorded
request, and per-request masking (SWE-agent's last_n_observations) shows the recorded placeholders.

This is the policy ``replay fidelity`` replays: with the prompt model it should give the prompt the server
counted, request by request. Every other policy replays the run without the harness's own artifacts (the driver
zeroes them for every policy but this one)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replay.jit import compiled
from replay.policies.base import CompiledPolicy
from replay.policies.condenser_prompt import (
    EVENT_CHARS,
    INSTRUCTION,
    NO_CONDENSER,
    SUMMARY,
    WRITTEN,
    add_item,
    event_ids,
)
from replay.policies.config import PolicyConfig
from replay.policies.kernel import (
    S_END,
    S_K,
    S_SUMMARISED,
    SUMMARY_CLEARED,
    SUMMARY_MADE,
    drop,
    set_form,
    set_summariser_prompt,
)
from replay.policies.masking import token_ratio
from replay.policies.view import DROPPED, ORIGINAL, PLACEHOLDER

# aux rows: a recorded placeholder's real tokens and characters (last recorded wins); request + 1 at which the
# item is a placeholder now; the item's event id as the run's condenser counts events (condenser_prompt)
(A_SHOWN, A_CHARS, A_NOW, A_EVENT) = range(4)


@dataclass(frozen=True)
class RecordedConfig(PolicyConfig):
    """Replay the context events the log records (compaction, condensation, per-request placeholders)."""

    kind = "recorded"


class Recorded(CompiledPolicy):
    name = "recorded"
    Config = RecordedConfig
    config: RecordedConfig  # PolicyBase.__init__ checks the instance is a Config
    replays_recorded = True


@compiled(borrowed=True)
def setup(p, r, st):
    """A recorded placeholder's tokens: its characters at the run's own tokens per character (the wording's text
    is not stored, only its length), never above the item; estimated at chars/4. A run whose harness's condenser
    is known gets its event ids."""
    if r.condenser != NO_CONDENSER:
        ids = event_ids(r.kind, r.step, r.first_body)
        for q in range(len(ids)):
            st.aux[A_EVENT, q] = ids[q]
    if len(r.mask_pos) == 0:
        return
    ratio = token_ratio(r)
    for i in range(len(r.mask_pos)):
        q = r.mask_pos[i]
        st.aux[A_SHOWN, q] = np.int64(np.ceil(r.mask_chars[i] * ratio))
        st.aux[A_CHARS, q] = r.mask_chars[i]
    for q in range(len(r.kind)):
        if st.aux[A_SHOWN, q] > 0:
            st.ftok[PLACEHOLDER, q] = min(st.aux[A_SHOWN, q], max(r.tokens[q], 1))
            st.fest[PLACEHOLDER, q] = (st.aux[A_CHARS, q] + 3) // 4


@compiled(borrowed=True)
def decide(p, r, st):
    """Events recorded at this request drop their items present (with call/result partners: the API needs both;
    not a partner new in this request that follows the event's re-sent copy of the item: ``resent_partner``);
    this request's recorded placeholders replace the previous request's. A summary made by a known condenser is
    charged the prompt that condenser sends (``summariser_prompt``), else the whole previous prompt."""
    k, end = st.s[S_K], st.s[S_END]
    new_from = r.req_end[k - 1] if k > 0 else 0  # the items this request adds
    for e in range(len(r.ev_step)):
        if r.ev_step[e] == k or (k == 0 and r.ev_step[e] < 0):
            if r.ev_summary[e] and r.condenser != NO_CONDENSER:
                summariser_prompt(r, st, e)
            for j in range(r.ev_drop_off[e], r.ev_drop_off[e + 1]):
                q = r.ev_drop[j]
                if q < end and resent_partner(r, q, new_from):
                    set_form(st, q, DROPPED)  # its partner follows the copy the event re-sent: the copy's, it stays
                elif q < end:
                    drop(r, st, q)
            st.s[S_SUMMARISED] |= SUMMARY_MADE if r.ev_summary[e] else SUMMARY_CLEARED  # a microcompact: no call
    for i in range(len(r.mask_step)):
        if r.mask_step[i] == k:
            st.aux[A_NOW, r.mask_pos[i]] = k + 1
    for i in range(len(r.mask_step)):
        q = r.mask_pos[i]
        if k > 0 and r.mask_step[i] == k - 1 and st.aux[A_NOW, q] != k + 1 and st.forms[q] == PLACEHOLDER:
            set_form(st, q, ORIGINAL)
    for i in range(len(r.mask_step)):
        q = r.mask_pos[i]
        if r.mask_step[i] == k and st.forms[q] != DROPPED:
            set_form(st, q, PLACEHOLDER)


@compiled(internal=True)
def resent_partner(r, q, new_from):
    """Whether item q's partner is new in this request and comes after an unpaired re-sent copy of q's kind
    (``replay.run_arrays._pairs`` never pairs a copy with an original): in the harness's prompt it is the copy's
    partner, not q's."""
    partner = r.pair[q]
    if partner < new_from:
        return False
    for c in range(new_from, partner):
        if r.recorded_only[c] and r.pair[c] < 0 and r.kind[c] == r.kind[q]:
            return True
    return False


@compiled(internal=True)
def summariser_prompt(r, st, e):
    """Charge event ``e``'s summariser call the prompt the run's condenser sends: its instruction, the previous
    summary and the events the event forgets (its items still in the view, before it drops them)."""
    end = st.s[S_END]
    lo, hi = r.ev_drop_off[e], r.ev_drop_off[e + 1]
    gone = r.ev_drop[lo:hi]  # ascending (replay.simulator.kernels.packed)
    c = r.condenser
    acc = (np.int64(0), np.int64(-1), np.int64(0))
    for q in gone:
        if q < end and st.forms[q] != DROPPED:
            acc = add_item(r, st.aux[A_EVENT], q, c, EVENT_CHARS[c], acc)
    sent = acc[0]
    wrote = 0
    for q in range(end):  # the summary the call wrote: the log's own summary item of this request
        if (r.kind[q] == SUMMARY) & (r.step[q] == st.s[S_K]) & (r.recorded_only[q] != 0):
            wrote += max(r.tokens[q] - r.framing[q], 0)  # its text
    set_summariser_prompt(st, INSTRUCTION[c] + sent, WRITTEN[c], wrote)


POLICIES = (Recorded,)
