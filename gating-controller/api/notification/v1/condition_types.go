package v1

// Reasons of the Receiver's conditions besides fluxcd/pkg/apis/meta's.
const (
	// TokenNotFoundReason: the Secret of spec.secretRef, or its token, is missing.
	TokenNotFoundReason = "TokenNotFound"
	// ValidationFailedReason: the spec asks for something the controller does not do (a type
	// Sluice does not implement, a cross-namespace reference it may not follow).
	ValidationFailedReason = "ValidationFailed"
)
