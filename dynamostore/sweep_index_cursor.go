package dynamostore

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
)

// sweepIndexCursorVersion is the version of the cursors of SweepIndex
// mode; SweepScan's is sweepCursorVersion.
const sweepIndexCursorVersion = 6

// unindexedScan is where a sweep in SweepIndex mode stands in its scan of
// the table for the key records outside the expiry index.
type unindexedScan byte

const (
	// unindexedNone: no such scan is running.
	unindexedNone unindexedScan = iota
	// unindexedClean: scanning, and no such record was read yet.
	unindexedClean
	// unindexedFound: scanning, and such a record was read.
	unindexedFound
)

// indexCursor is the decoded form of a resume cursor of SweepIndex mode:
// where each shard of the index stands, and where the scan for the
// records outside the index does.
type indexCursor struct {
	Table  string
	Region string // "" for none
	Shards [ExpiryIndexShards]indexShardCursor
	// Unindexed is the state of the scan for the records outside the
	// index; while it runs, UnindexedAfter is the table key to continue
	// after (nil: from the start) and UnindexedSince the time it started,
	// in epoch milliseconds.
	Unindexed      unindexedScan
	UnindexedAfter map[string]sweepKeyValue
	UnindexedSince int64
	// Seen is set once the pass read an entry of the sweep's buckets.
	Seen bool
	// Next is the part the next run serves first: a shard, or
	// unindexedPart for the scan.
	Next int
}

// indexShardCursor is one shard's position: its phase, and the index key
// to continue the phase after (nil: from the phase's start).
type indexShardCursor struct {
	Phase indexPhase
	After map[string]sweepKeyValue
}

// Framing of a version 6 cursor, before base64url (no padding):
//
//	version byte (6)
//	uvarint length, table name
//	uvarint length, region (0 for none, at most MaxSweepRegionLen)
//	uvarint shard count (ExpiryIndexShards)
//	per shard: its phase byte, then, unless the phase is done, a key as
//	a scan's cursor holds one (a uvarint attribute count, 0 for the
//	phase's start, and the attributes)
//	the scan for the records outside the index: its state byte, then,
//	unless it is none, a table key as above and a uvarint start time
//	(epoch milliseconds)
//	a byte, 1 when the pass read an entry of its buckets, else 0
//	uvarint, the part the next run starts with (a shard, or 32: the scan).
//
// A shard's key holds up to four attributes (the table's partition key,
// the index's two keys, and the table's sort key when it has one), so the
// cursor of a table whose keys are at DynamoDB's maximal sizes takes 32
// such keys and one table key of about 3.2 KB, about 145 KB in base64:
// far below the 400 KB of the item Resume keeps it in.

// btob is 1 for true, 0 for false.
func btob(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// encode returns the cursor as an opaque string.
func (c *indexCursor) encode() string {
	b := appendBytes([]byte{sweepIndexCursorVersion}, []byte(c.Table))
	b = appendBytes(b, []byte(c.Region))
	b = binary.AppendUvarint(b, uint64(len(c.Shards)))
	for _, sh := range c.Shards {
		b = append(b, byte(sh.Phase))
		if sh.Phase != phaseDone {
			b = appendCursorKey(b, sh.After)
		}
	}
	b = append(b, byte(c.Unindexed))
	if c.Unindexed != unindexedNone {
		b = appendCursorKey(b, c.UnindexedAfter)
		b = binary.AppendUvarint(b, uint64(max(c.UnindexedSince, 0)))
	}
	b = append(b, btob(c.Seen))
	b = binary.AppendUvarint(b, uint64(c.Next))
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeIndexCursor decodes a cursor returned by a sweep in SweepIndex
// mode of table restricted to region ("" for none). Any other input, a
// cursor of SweepScan mode, of another table or of another region
// included, is an error matching ErrInvalidCursor; it never panics.
func decodeIndexCursor(s, table, region string) (*indexCursor, error) {
	raw, err := cursorBytes(s)
	if err != nil {
		return nil, err
	}
	switch {
	case len(raw) == 0:
		return nil, fmt.Errorf("%w: not a cursor", ErrInvalidCursor)
	case raw[0] == sweepCursorVersion:
		return nil, fmt.Errorf("%w: it belongs to a sweep in %s mode, this one is in %s mode", ErrInvalidCursor, SweepScan, SweepIndex)
	case raw[0] != sweepIndexCursorVersion:
		return nil, fmt.Errorf("%w: not a cursor", ErrInvalidCursor)
	}
	r := &cursorReader{b: raw[1:]}
	c := &indexCursor{Table: string(r.bytes()), Region: string(r.bytes())}
	if len(c.Region) > MaxSweepRegionLen || r.uvarint(ExpiryIndexShards) != ExpiryIndexShards {
		r.fail()
	}
	for i := 0; i < ExpiryIndexShards && r.err == nil; i++ {
		sh := &c.Shards[i]
		sh.Phase = indexPhase(r.byte())
		switch {
		case sh.Phase > phaseDone:
			r.fail()
		case sh.Phase != phaseDone:
			if sh.After = r.key(); len(sh.After) == 0 {
				sh.After = nil
			}
		}
	}
	switch c.Unindexed = unindexedScan(r.byte()); {
	case c.Unindexed > unindexedFound:
		r.fail()
	case c.Unindexed != unindexedNone:
		if c.UnindexedAfter = r.key(); len(c.UnindexedAfter) == 0 {
			c.UnindexedAfter = nil
		}
		c.UnindexedSince = int64(r.uvarint(math.MaxInt64))
	}
	switch r.byte() {
	case 0:
	case 1:
		c.Seen = true
	default:
		r.fail()
	}
	c.Next = r.uvarint(unindexedPart)
	if r.err == nil && len(r.b) != 0 {
		r.fail()
	}
	if r.err != nil {
		return nil, r.err
	}
	if err := checkCursorOwner(c.Table, c.Region, table, region); err != nil {
		return nil, err
	}
	for i, sh := range c.Shards {
		if err := checkCursorKey(sh.After); err != nil {
			return nil, fmt.Errorf("%w: shard %d: %s", ErrInvalidCursor, i, err.Error())
		}
	}
	if err := checkCursorKey(c.UnindexedAfter); err != nil {
		return nil, fmt.Errorf("%w: the scan for records outside the index: %s", ErrInvalidCursor, err.Error())
	}
	return c, nil
}
