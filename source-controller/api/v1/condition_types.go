package v1

// Condition types and reasons of the sources, as in Flux's source API.
const (
	// FetchFailedCondition: the source could not be fetched.
	FetchFailedCondition = "FetchFailed"
	// ArtifactOutdatedCondition: the stored artifact is not the one the spec asks for.
	ArtifactOutdatedCondition = "ArtifactOutdated"
	// ArtifactInStorageCondition: an artifact is stored and served.
	ArtifactInStorageCondition = "ArtifactInStorage"
	// StorageOperationFailedCondition: storing, verifying or collecting artifacts failed.
	StorageOperationFailedCondition = "StorageOperationFailed"
)

const (
	// URLInvalidReason: the URL does not parse or has an unsupported scheme.
	URLInvalidReason = "URLInvalid"
	// AuthenticationFailedReason: the credentials were refused or the secret is unusable.
	AuthenticationFailedReason = "AuthenticationFailed"
	// GitOperationFailedReason: a Git operation failed (unknown ref, network, timeout).
	GitOperationFailedReason = "GitOperationFailed"
	// NewRevisionReason: the remote has a revision the artifact does not have yet.
	NewRevisionReason = "NewRevision"
	// SucceededReason: the artifact is stored.
	SucceededReason = "Succeeded"
	// ArchiveOperationFailedReason: the artifact could not be written.
	ArchiveOperationFailedReason = "ArchiveOperationFailed"
	// ArtifactTooLargeReason: the artifact is over --artifact-max-size.
	ArtifactTooLargeReason = "ArtifactTooLarge"
	// SourceTooLargeReason: what was fetched is over its limit, a Git clone over
	// --git-max-clone-size or an OCI layer over --oci-max-layer-size; it was not stored.
	SourceTooLargeReason = "SourceTooLarge"
	// StatOperationFailedReason: the stored artifact could not be read or verified.
	StatOperationFailedReason = "StatOperationFailed"
	// GarbageCollectionFailedReason: old artifacts could not be deleted.
	GarbageCollectionFailedReason = "GarbageCollectionFailed"
	// NewArtifactReason is the event reason of a new artifact.
	NewArtifactReason = "NewArtifact"
	// ArtifactUpToDateReason is the reason of a reconcile that found nothing new.
	ArtifactUpToDateReason = "ArtifactUpToDate"
)

// SourceFinalizer removes the stored artifacts of a deleted source.
const SourceFinalizer = "finalizers.fluxcd.io"

const (
	// IndexationFailedReason: the Helm repository index could not be fetched or read.
	IndexationFailedReason = "IndexationFailed"
)

const (
	// SourceVerifiedCondition: the signature of the pulled content was verified (True) or not (False).
	SourceVerifiedCondition = "SourceVerified"
	// VerificationErrorReason: no trusted key verifies a signature of the content.
	VerificationErrorReason = "VerificationError"
)

const (
	// OCIPullFailedReason: the OCI artifact could not be resolved or pulled.
	OCIPullFailedReason = "OCIArtifactPullFailed"
	// OCILayerOperationFailedReason: the layer could not be extracted or copied.
	OCILayerOperationFailedReason = "OCIArtifactLayerOperationFailed"
)

// The condition and reasons of GitRepository spec.include, as Flux's.
const (
	// IncludeUnavailableCondition: an included GitRepository does not exist or has no artifact
	// yet; the GitRepository waits for it (Ready=False).
	IncludeUnavailableCondition = "IncludeUnavailable"
	// IncludeNotFoundReason: the included GitRepository does not exist.
	IncludeNotFoundReason = "NotFound"
	// IncludeNoArtifactReason: the included GitRepository has no artifact yet.
	IncludeNoArtifactReason = "NoArtifact"
	// IncludeChangeReason (ArtifactOutdated): an included artifact changed.
	IncludeChangeReason = "IncludeChange"
	// IllegalPathReason: a fromPath or toPath leads outside its artifact.
	IllegalPathReason = "IllegalPath"
	// CopyFailureReason: the included artifact could not be read, or has no fromPath.
	CopyFailureReason = "CopyFailure"
)

// The SourceVerified=False reasons of a GitRepository, as Flux's.
const (
	// InvalidVerificationModeReason: Tag or TagAndHEAD for a reference that is not a tag.
	InvalidVerificationModeReason = "InvalidVerificationMode"
	// InvalidGitObjectReason: the tag to verify is unsigned or lightweight.
	InvalidGitObjectReason = "InvalidGitObject"
	// InvalidTagSignatureReason: no trusted key verifies the tag's signature.
	InvalidTagSignatureReason = "InvalidTagSignature"
	// InvalidCommitSignatureReason: the commit is unsigned, or no trusted key verifies it.
	InvalidCommitSignatureReason = "InvalidCommitSignature"
)
