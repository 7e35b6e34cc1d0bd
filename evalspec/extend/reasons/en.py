"""Every built-in check's reason in English (run.json's `reason`), rendered by `evalspec.extend.check.say`
(docs/en/reports-and-gate.md#language)."""

from __future__ import annotations

#: every built-in check's reason (run.json's `reason`; zh.py's REASONS give `reason_zh`), filled by
#: `evalspec.extend.check.say`; a field is a value the check found (a pattern, a reply's words, a number)
REASONS: dict[str, str] = {
    "empty": "", "as_is": "{text}", "yes": "True", "no": "False",
    "with_detail": "{reason}: {detail}", "with_measures": "{problems} — {measures}",
    # combining the replies on a scope, negation
    "unexpected": "unexpected: {reason}", "no_reply_passed": "no reply passed ({n} checked): {reason}",
    "replies_failed": "{failed}/{n} replies failed (turns {turns}): {reason}",
    "replies_failed_unchecked": "{failed}/{n} replies failed, {unchecked} could not be checked: {reason}",
    "all_replies_passed": "all {n} replies passed",
    # text
    "quoted": "{text}", "quoted_read_as": "{text} (read as {read_as})",
    "found": "found {what}", "not_found": "did not find {text}", "equal": "equal", "expected": "expected {text}",
    "none_found": "none of {texts} found", "all_found": "all found", "missing": "missing {texts}",
    "starts_with": "starts with it", "not_starts_with": "does not start with {text}",
    "matched": "matched {what}", "no_match": "no match for /{pattern}/",
    "no_json": "no valid JSON", "json_schema": "JSON does not match the schema: {error}", "valid_json": "valid JSON",
    "reply_not_json": "reply is not JSON", "expr_is": "{expr} = {value}",
    "expr_expected": "{expr} = {value}, expected {expected}",
    "expr_no_match": "{expr} = {value}, does not match /{pattern}/",
    "words": "{n} words (min {min}, max {max})", "edit_distance": "edit distance {n} (max {max})",
    "not_recorded": "no {unit} recorded for this reply", "at_most_measured": "{value} (max {max})",
    "finish_reason": "finish reason {found}", "finish_reason_expected": "finish reason {found}, expected {expected}",
    "similarity": "similarity {value} (threshold {threshold})",
    # pii
    "pii_none": "no {kinds} found", "pii_hit": "{kind} {text}", "pii_hit_read_as": "{kind} {text} (read as {read_as})",
    "pii_found": "found {hits}{more}", "and_more": " and {n} more",
    # session
    "what_state": "state {expr}", "what_tool": "tool {tool}", "what_pattern": "/{pattern}/",
    "matched_before": "turn {turn} matched {what} before turn {limit}",
    "none_before": "no reply before turn {limit} matched", "turn_matched": "turn {turn} matched",
    "turn_n": "turn {n}", "turns_span": "turns {start}-{end}", "none_in": "no reply in {span} matched {what}",
    "calls_to": "{n} calls to {tool}", "replies_matched": "{n} replies matched",
    "at_most": "{what} (at most {limit})", "at_most_turns": "{what} (at most {limit}): turns {turns}",
    "matched_after": "turn {turn} matched {what} at or after turn {start}",
    "none_after": "no reply from turn {start} on matched",
    "user_turns": "{n} user turns (min {min}, max {max})",
    # memory
    "fact_found": "{key} found {found}{partial}", "fact_missing": "{key} not found{partial}",
    "fact_partial": " (partial: expected {expected})", "recall": "recall {score}: {facts}",
    "refers_wrong": "expected {want}, but the reply names {found}",
    "refers_neither": "expected {want}, but the reply names neither", "refers_names": "names {found}",
    "clarify_heuristic": "question mark: {question}, clarifying phrase: {phrase}",
    "fewer_than_two": "fewer than two messages ({include})",
    "coherence": "{include}: adjacent mean {mean}, variance {variance}, head–tail {head_tail}, drift {drift}, "
                 "max adjacent {max}",
    "coherence_low": "adjacent mean {mean} < {min}", "coherence_drift": "drift {drift} > {max}",
    "coherence_repeats": "adjacent similarity {value} > {max} (repetition)",
    "no_user_turns": "no user turns",
    "efficiency": "{n} of {turns} user turns correct the assistant (efficiency {score}, min {min})",
    # state and buttons
    "state_expected": "expected {value}", "state_no_match": "does not match /{pattern}/",
    "state_not_in": "not one of {values}", "state_should_exist": "expected it to exist",
    "state_should_not_exist": "expected it not to exist", "state_not_true": "not true",
    "state_failed": "{said}, {expected}",
    "no_buttons": "no buttons", "buttons": "buttons {buttons}",
    "buttons_exactly": "buttons {buttons}, expected exactly {wanted}",
    "buttons_missing": "missing {missing} (buttons: {buttons})", "buttons_offers": "offers {wanted}",
    # tools
    "in_conversation": "in the conversation", "in_turn": "in turn {turn}", "at_turn": " (turn {turn})",
    "at_least": "at least {n}", "exactly": "exactly {n}", "between": "{lo} to {hi}",
    "tool_called": "{tool} called {n} time(s) {where} (expected {bounds})",
    "tool_called_expected": "{tool} called {n} time(s) {where}, expected {bounds}{note}{none}",
    "tool_other_args": "; {n} call(s) to {tool} with other arguments", "no_tool_calls": " (no tool calls)",
    "tool_was_called": "{tool} was called {where}{at}", "tools_not_called": "{tools} not called {where}",
    "tool_sequence": "{mode}: called [{names}] vs reference [{expected}]",
    "tool_args_invalid": "{bad} of {n} call(s) invalid: {call}: {why}",
    "tool_args_valid": "{n} call(s) {where} match their declared schema",
    # sql
    "sql_invalid": "not {dialect} SQL: {why}", "sql_table_not_allowed": "table not allowed: {found} (allowed: {allowed})",
    "sql_column_not_allowed": "column not allowed: {found} (allowed: {allowed})",
    "sql_valid": "valid {dialect} SQL ({n} statement{s})",
    # python and javascript checks
    "returned": "{name} returned {value}", "returned_passes": "{name} returned {value} (passes {rule})",
    "above_zero": "above 0",
    # judged
    "level_chosen": "{level} ({score}): {why}",
    "samples_chose": "{n}/{samples} samples chose {level} ({score}): {why}",
    "jury_verdict": "jury ({rule}): {passed}/{n} answering judges of {members} passed; {why}",
    "jury_short": "only {n} judges of the jury answered, below its quorum of {quorum} ({errors})",
    "samples_passed": "{n}/{samples} judge samples passed; {why}", "turns_good": "{good}/{n} turns good{bad}",
    "chosen_best": "chosen as the best of {n}: {why}",
    "not_chosen": "not chosen: the judge picked {best} as the best of {n}: {why}",
    "pairwise_win": "better than {side} in both orders: {why}",
    "pairwise_loss": "worse than {side} in both orders: {why}",
    "pairwise_tie": "a tie with {side} in both orders: {why}",
    "pairwise_inconsistent": "tie (position-inconsistent) with {side}: the judge's answer changed when the sides "
                             "swapped: {why}",
    # the world the bot acts on (docs/en/world.md)
    "world_no_contain": "does not contain {value}", "world_expected": "the final world is the expected one",
    "world_more": " and {n} more", "world_differs": "the final world differs at {paths}{more}",
    "world_unchanged": "unchanged: {paths}", "world_changed": "changed: {paths}",
    "claim_never_called": "turn {turn} says {said} but {tool} was never called",
    "claim_errored": "turn {turn} says {said} but every {tool} call errored",
    "claims_more": " (and {n} more)", "claims_first": "{first}{more}",
    "claims_done": "every claimed action was done ({n} claims)", "claims_none": "no reply claims an action",
}
