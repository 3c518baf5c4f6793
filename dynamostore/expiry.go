package dynamostore

import (
	"github.com/idemkey/idemkey/internal/keyschema"
)

// The expiry index: what lets a Sweeper in SweepIndex mode read the expired
// and the in-progress records without reading the live ones.
const (
	// ExpiryBucketAttribute is the String attribute that every record a
	// Store writes carries (see ExpiryBucket), and the partition key of
	// the expiry index. A KeySchema must not name it.
	ExpiryBucketAttribute = "exp_bucket"
	// ExpiryIndexName is the name of the expiry index: a global secondary
	// index of the key table whose partition key is ExpiryBucketAttribute
	// (String) and whose sort key is the schema's TTL attribute (Number),
	// projecting the attributes a sweep decides on (see
	// EnsureExpiryIndex).
	ExpiryIndexName = "idemkey-expiry"
	// ExpiryIndexShards is the number of shards of each kind of bucket: a
	// record's shard is a hash of its partition key value modulo 32. It
	// is fixed in the library, so that writers and sweepers never
	// disagree on it. Each bucket value is one partition key of the index,
	// which takes at most 1,000 writes per second: a claim writes its
	// in-progress bucket once and its commit once more (a delete), so 32
	// shards carry about 16,000 requests per second.
	ExpiryIndexShards = 32
)

// Bucket kinds: the first byte of a bucket value after the namespace.
const (
	bucketCompleted  = 'c'
	bucketInProgress = 'p'
)

// ExpiryBucket returns the value of ExpiryBucketAttribute that a Store
// using schema writes on a record whose partition key value is
// partitionKey (the value of the schema's partition key attribute, Prefix
// included) and whose state is state: "c" for a completed record, "p" for
// an in-progress one, followed by the record's shard in two decimal digits
// ("c07", "p31"), and on a schema with a Prefix preceded by Prefix + "#"
// ("idemkey#c07").
//
// The value depends on the record's state and partition key only, not on
// its exp: the index's sort key is the TTL attribute itself, so a Query
// with a condition on it reads the expired records of a bucket, oldest
// first, however old they are, and no time range of buckets needs to be
// enumerated. In-progress records have buckets of their own, so that a
// sweep reads every in-progress record (those whose lock expired are the
// stuck ones, whose exp is still ahead) without reading any completed
// live record.
//
// A record written before this attribute existed has none and is not in
// the index: a sweep in SweepIndex mode never sees it, DynamoDB's TTL
// deletes it, and writing it again (any claim or commit) or setting the
// attribute to this value puts it in the index.
func ExpiryBucket(schema KeySchema, partitionKey string, state State) string {
	kind := byte(bucketCompleted)
	if state == StateInProgress {
		kind = bucketInProgress
	}
	return keyschema.Schema(schema).Namespaced(bucketValue(kind, expiryShard(partitionKey)))
}

// bucketValue returns the bucket of a kind and a shard, without namespace.
func bucketValue(kind byte, shard int) string {
	b := []byte{kind, '0' + byte(shard/10), '0' + byte(shard%10)}
	return string(b)
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
