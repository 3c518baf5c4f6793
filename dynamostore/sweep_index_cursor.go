package dynamostore

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
)

// sweepIndexCursorVersion is the version of SweepIndex mode's cursors.
const sweepIndexCursorVersion = 6

// unindexedScan is where the scan for the records outside the index stands.
type unindexedScan byte

const (
	// unindexedNone: no such scan is running.
	unindexedNone unindexedScan = iota
	// unindexedClean: scanning, and no such record was read yet.
	unindexedClean
	// unindexedFound: scanning, and such a record was read.
	unindexedFound
)

// indexCursor is a decoded cursor of SweepIndex mode.
type indexCursor struct {
	Table  string
	Region string // "" for none
	Shards [ExpiryIndexShards]indexShardCursor
	// While the unindexed scan runs: the key to continue after (nil: the
	// start) and its start in epoch ms.
	Unindexed      unindexedScan
	UnindexedAfter map[string]sweepKeyValue
	UnindexedSince int64
	Seen           bool // the pass read an entry of the sweep's buckets
	Next           int  // the part the next run serves first
}

// indexShardCursor is one shard's phase and key to continue after.
type indexShardCursor struct {
	Phase indexPhase
	After map[string]sweepKeyValue
}

// Framing of a version 6 cursor, before base64url (no padding): the
// version byte, the table and region as a scan cursor's, a uvarint shard
// count (ExpiryIndexShards); per shard its phase byte and, unless done, a
// key as a scan cursor's (0 attributes: the phase's start); the unindexed
// scan's state byte and, unless none, a table key and a uvarint start
// (epoch ms); a byte, 1 when the pass read an entry of its buckets; a
// uvarint, the part the next run starts with. At DynamoDB's maximal key
// sizes it takes about 145 KB, far below the cursor item's 400 KB.

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

// decodeIndexCursor decodes an index cursor of table and region; any other
// input is an error matching ErrInvalidCursor.
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
