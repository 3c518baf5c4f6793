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
	// ExpiryIndexShards is the number of buckets, fixed so that writers and
	// sweepers agree. A bucket is one index partition (1,000 writes per
	// second) and a request writes its entry twice (claim; eviction or
	// release), so
	// 32 buckets carry about 16,000 requests per second.
	ExpiryIndexShards = 32
)

// ExpiryBucket returns the value of ExpiryBucketAttribute that a Store
// using schema writes on the record whose partition key value (Prefix
// included) is partitionKey: its shard in two decimal digits ("07"),
// after Prefix + "#" on a schema with a Prefix ("idemkey#07"). It depends
// on the partition key only, so a commit within the lock leaves the index
// entry as it is; the index's sort key is the TTL attribute, so a Query
// reads a bucket's expired records oldest first. A record written without
// Options.ExpiryIndex has none (see SweepMode); writing it again with the
// option puts it in the index.
func ExpiryBucket(schema KeySchema, partitionKey string) string {
	return keyschema.Schema(schema).Namespaced(bucketValue(expiryShard(partitionKey)))
}

// bucketValue returns the bucket of a shard, without namespace.
func bucketValue(shard int) string {
	return string([]byte{'0' + byte(shard/10), '0' + byte(shard%10)})
}

// expiryShard is FNV-1a of pk mixed by MurmurHash3's finalizer (FNV's low
// bits alone follow the last bytes), modulo ExpiryIndexShards.
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
