package dynamostore

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey/internal/keyschema"
)

// KeySchema says where key records live in a table and how (scope, key)
// maps onto its primary key. The zero value is the layout of a dedicated
// key table: partition key "pk" (PartitionKey), no sort key, TTL on "exp"
// (TTLAttribute).
//
// On a table shared with the application's own items (single-table
// design), set the table's key attribute names, its TTL attribute and a
// Prefix. A key record's partition key value is then
//
//	Prefix + "#" + len(scope) + ":" + scope + key
//
// (the length in decimal), and its sort key, if the table has one, is the
// constant SortKeyValue. Key records and the application's items are
// disjoint when no application item's partition key value begins with
// Prefix + "#" (with SortKeyValue as its sort key, on a table with one):
// pick a Prefix the application never uses, such as "idemkey". As a
// Prefix holds no '#' nor ':', stores with different prefixes, or with a
// Prefix and without, never address each other's records.
//
// On a schema with a Prefix, every record also carries the String
// attribute "idemkey", and every delete of the sweeper is conditioned on
// it and on the Prefix: an application item is never deleted, whatever
// its TTL attribute says. Key records write epoch seconds in the TTL
// attribute, which they share with the application's items.
type KeySchema struct {
	// PartitionKey is the name of the table's partition key, a String
	// (default "pk").
	PartitionKey string
	// SortKey is the name of the table's sort key, a String; empty for a
	// table without one.
	SortKey string
	// SortKeyValue is the sort key value of every key record; required
	// with SortKey, at most 256 bytes.
	SortKeyValue string
	// Prefix begins every key record's partition key value, followed by
	// '#'. Required when SortKey is set or PartitionKey is not "pk"; set
	// it too on a table with the default names that holds other items.
	// At most 64 bytes of printable ASCII, without spaces, '#' or ':'.
	Prefix string
	// TTLAttribute is the record's expiry attribute, a Number of epoch
	// seconds (default "exp").
	TTLAttribute string
}

// internal converts s to the internal schema with its defaults.
func (s KeySchema) internal() keyschema.Schema { return keyschema.Schema(s).WithDefaults() }

// recordAttributes are the attribute names of a key record besides the
// key and TTL attributes; a schema must not name any of them.
var recordAttributes = []string{
	attrVersion, attrMethod, attrPath, attrFP, attrState, attrLock, attrLockExp, attrStatus,
	attrHeader, attrBody, attrEnc, attrOmitted, attrCreated, attrDone, attrRegion, keyschema.Marker,
	attrSweepCursor, attrSweepUpdated, ExpiryBucketAttribute,
}

// Validate reports what makes s unusable: a SortKey without SortKeyValue
// (or the reverse), a shared table's schema (a SortKey, or a PartitionKey
// other than "pk") without a Prefix, a Prefix with '#', ':', a space or
// a non-ASCII byte, a TTLAttribute that is a key attribute, or a name that
// is one of the record's own attributes. New and NewSweeper panic with its
// error.
func (s KeySchema) Validate() error {
	if err := s.internal().Check(recordAttributes); err != nil {
		return fmt.Errorf("dynamostore: KeySchema: %w", err)
	}
	return nil
}

// mustSchema validates s for the constructor named by who and returns it
// with its defaults.
func mustSchema(who string, s KeySchema) keyschema.Schema {
	if err := s.Validate(); err != nil {
		panic(who + ": " + err.Error())
	}
	return s.internal()
}

// marked reports whether records of schema s carry the marker attribute.
func marked(s keyschema.Schema) bool { return s.Prefix != "" }

// markerValue is the marker attribute's value: the record format.
var markerValue = &types.AttributeValueMemberS{Value: recordFormat}

// layout is a validated schema with the expression attribute names its
// calls share; the SDK only reads them.
type layout struct {
	keyschema.Schema
	indexed        bool // Options.ExpiryIndex
	claimCondition string
	claimNames     map[string]string
}

func newLayout(s keyschema.Schema) *layout {
	l := &layout{
		Schema:         s,
		claimCondition: claimCondition,
		claimNames:     map[string]string{"#pk": s.PartitionKey, "#exp": s.TTLAttribute, "#state": attrState, "#lock_exp": attrLockExp},
	}
	if marked(s) {
		l.claimCondition = "attribute_not_exists(#pk) OR (attribute_exists(#marker) AND ((#state = :in_progress AND #lock_exp < :now_ms) OR (#exp < :now_s AND NOT (#state = :in_progress))))"
		l.claimNames["#marker"] = keyschema.Marker
	}
	return l
}

// defaultLayout is the layout of the zero KeySchema.
var defaultLayout = newLayout(KeySchema{}.internal())
