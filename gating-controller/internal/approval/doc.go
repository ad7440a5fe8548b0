// Package approval decides the approval of a gate's open requests (docs/gate.md,
// "Approvals"), as pure functions of the Gate's spec.approval and status.approval, so that the
// controller only reads and writes objects:
//
//   - Pend and Withdraw: an open request becomes pending approval, or a later close request
//     withdraws it.
//   - Answer: which pending request a new response (GateApproval) answers, or why it answers
//     none.
//   - Count: which responses count (revision scope, self-approval by the requester or an
//     author, approvers of the rules, expiry, one approval per user, a rejection) and whether
//     they satisfy the rules.
//   - Match: the assignment of approvers to rules, each counting once toward at most one rule,
//     so that as many rule minimums as possible are met.
//   - The messages of the Approved condition and of the Ready condition's note.
package approval
