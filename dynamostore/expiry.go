package dynamostore

import (
	"github.com/idemkey/idemkey/internal/keyschema"
)

// The expiry index: what lets a Sweeper in SweepIndex mode read the
// expired records without reading the live ones.
const (
	// ExpiryBucketAttribute is the String attribute that every record a
	// Store with Options.ExpiryIndex writes carries (see ExpiryBucket),
	// and the partition key of the expiry index. A KeySchema must not
	// name it.
	ExpiryBucketAttribute = "exp_bucket"
	// ExpiryIndexName is the name of the expiry index: a global secondary
	// index of the key table whose partition key is ExpiryBucketAttribute
	// (String) and whose sort key is the schema's TTL attribute (Number),
	// projecting the attributes that no write after a claim changes (see
	// EnsureExpiryIndex).
	ExpiryIndexName = "idemkey-expiry"
	// ExpiryIndexShards is the number of buckets: a record's bucket is a
	// hash of its partition key value modulo 32. It is fixed in the
	// library, so that writers and sweepers never disagree on it. Each
	// bucket value is one partition key of the index, which takes at most
	// 1,000 writes per second: a request writes its bucket's index entry
	// twice (its claim puts it, its eviction or release removes it; its
	// commit leaves it as it is), so 32 buckets carry about 16,000
	// requests per second.
	ExpiryIndexShards = 32
)

// ExpiryBucket returns the value of ExpiryBucketAttribute that a Store
// using schema writes on a record whose partition key value is
// partitionKey (the value of the schema's partition key attribute, Prefix
// included): the record's shard in two decimal digits ("07", "31"),
// preceded on a schema with a Prefix by Prefix + "#" ("idemkey#07").
//
// The value depends on the partition key only: neither the record's state
// nor its exp changes it, and a Store changes a record's exp after its
// claim only for a commit made after the claim's lock expired (see
// Options.Retention), so a commit within the lock leaves the record's
// index entry as it is. The index's sort key is the TTL
// attribute itself, so a Query with a condition on it reads the expired
// records of a bucket, oldest first, however old they are, and no time
// range of buckets needs to be enumerated.
//
// A record written by a Store without Options.ExpiryIndex (or before the
// index existed) has none and is not in the index. A sweep in SweepIndex
// mode finds such records by scanning the table for them (see SweepMode):
// it evicts them when expired and counts them as SweepReport.Unindexed,
// their expiry in EvictionLag, until a whole scan finds none, and then
// scans again once UnindexedScanInterval has passed. DynamoDB's TTL also
// deletes them, on a table whose TTL is on (not one of multiregion's
// HomeRegion or the template's WriterRegion). Writing a record again with
// the option (any claim or commit) puts it in the index.
func ExpiryBucket(schema KeySchema, partitionKey string) string {
	return keyschema.Schema(schema).Namespaced(bucketValue(expiryShard(partitionKey)))
}

// bucketValue returns the bucket of a shard, without namespace.
func bucketValue(shard int) string {
	return string([]byte{'0' + byte(shard/10), '0' + byte(shard%10)})
}

// expiryShard returns the shard of a partition key value: FNV-1a (32 bits)
// of its bytes, mixed by MurmurHash3's 32-bit finalizer (FNV's low bits
// alone follow the last bytes too closely: keys that end alike would
// share a few shards), modulo ExpiryIndexShards.
func expiryShard(pk string) int {
	h := uint32(2166136261)
	for i := 0; i < len(pk); i++ {
		h ^= uint32(pk[i])
		h *= 16777619
	}
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return int(h % ExpiryIndexShards)
}
