package multiregion

import (
	"errors"
	"strings"
)

var (
	// ErrInvalidConfig reports a configuration New refuses: no regions, a
	// region without a name or store, a duplicate name, a pin to an unknown
	// region, or an option that does not apply to the mode.
	ErrInvalidConfig = errors.New("multiregion: invalid configuration")

	// ErrTransactionsUnsupported reports effects staged for a
	// TransactWriteItems on a table that cannot run one: a Strong
	// (multi-Region strong consistency) table. New returns it (in a
	// *ConfigError) for Strong mode unless Options.Effects says effects are
	// keyed or absent; Commit returns it when a Strong-mode commit carries
	// staged effects anyway. Nothing is written in either case.
	ErrTransactionsUnsupported = errors.New("multiregion: MRSC tables do not support transactions")

	// ErrTTLUnsupported reports a configuration that relies on DynamoDB TTL
	// to evict key records on a table that has none: a Strong (multi-Region
	// strong consistency) table. New returns it (in a *ConfigError) for
	// Strong mode unless Options.Eviction is EvictBySweeper.
	ErrTTLUnsupported = errors.New("multiregion: MRSC tables do not support TTL")

	// ErrTTLReplicated reports a configuration that relies on DynamoDB TTL
	// to evict key records of a multi-Region eventually consistent (MREC)
	// global table in HomeRegion mode: a TTL deletion in one replica is
	// replicated to every other and, resolved last writer wins, can erase a
	// newer record written in the key's home region, so a completed key
	// executes again. New returns it (in a *ConfigError) for HomeRegion mode
	// unless Options.Eviction is EvictBySweeper.
	ErrTTLReplicated = errors.New("multiregion: TTL deletions replicate across an MREC table and can erase a live record")

	// ErrNotStrongTable reports a Strong-mode Store over a table that is
	// not a multi-Region strongly consistent (MRSC) global table: its
	// DescribeTable answer has no MultiRegionConsistency of STRONG (a
	// single-Region or MREC table, or an implementation that does not say).
	// Conditional writes in two regions of such a table are not checked
	// against each other, so a key could execute once per region. Claim,
	// Commit, Release and Get return it (in a *ConfigError) before anything
	// is read or written.
	ErrNotStrongTable = errors.New("multiregion: the table is not a multi-Region strongly consistent (MRSC) table")

	// ErrUnknownRegion reports a claim whose record names a region the
	// router does not know (a claim made by another router or store).
	ErrUnknownRegion = errors.New("multiregion: claim from an unknown region")

	// ErrNoScanner reports that Reconcile needs a Scanner for a region and
	// none was configured (Region.Scanner).
	ErrNoScanner = errors.New("multiregion: region has no scanner")
)

// ConfigError is the error New returns for a configuration it refuses, and
// the error a Strong-mode call returns over a table that is not MRSC. It
// matches ErrInvalidConfig, and also ErrTransactionsUnsupported,
// ErrTTLUnsupported, ErrTTLReplicated or ErrNotStrongTable when that is
// the reason, with errors.Is. It is permanent: retrying does not help.
type ConfigError struct {
	Mode   Mode
	Field  string // the option or region at fault, e.g. "Effects"
	Reason string // what is wrong and what to do instead
	Err    error  // ErrInvalidConfig, ErrTransactionsUnsupported, ErrTTLUnsupported, ErrTTLReplicated or ErrNotStrongTable
}

func (e *ConfigError) Error() string {
	return "multiregion: " + e.Mode.String() + " mode: " + e.Field + ": " + e.Reason
}

// Unwrap returns the sentinel error of the refusal.
func (e *ConfigError) Unwrap() error { return e.Err }

// Is reports whether target is ErrInvalidConfig (every ConfigError is one).
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// RegionError reports that no region that may serve a request could be
// reached: the key's home region (HomeRegion mode without failover), every
// region of the key's order (with failover), or every region (Strong). Err
// is the last region's error, a *dynamostore.StoreError, so the idemkey
// Guard answers it as unavailable (503 with Retry-After) and nothing runs.
type RegionError struct {
	// Regions are the regions tried, in order.
	Regions []string
	Err     error
}

func (e *RegionError) Error() string {
	return "multiregion: region " + strings.Join(e.Regions, ", ") + " unavailable: " + e.Err.Error()
}

// Unwrap returns the last region's error.
func (e *RegionError) Unwrap() error { return e.Err }
