package localstack

import (
	"encoding/base64"
	"slices"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/server"
)

// A decoder for the request bodies of the front's hot paths, PutItem and
// TransactWriteItems, into minidyn's request types. encoding/json spends
// most of a call's decoding in reflection and in scanning the body twice
// (once to validate it); this decoder reads the body once, for the
// members of these requests only.
//
// It gives exactly what encoding/json gives, or declines: it reports false
// for any body it cannot be sure to decode as encoding/json would, and the
// caller then decodes that body with encoding/json. It declines a member
// the request type does not have or that it does not decode (Expected,
// AttributeUpdates), a member name that is not spelt exactly (encoding/json
// also matches other cases), a member given twice, null, a JSON number, a
// string with an escape sequence, a control character or a byte outside
// ASCII, and anything after the value. The SDK writes none of these in the
// requests it sends for idemkey.
//
// The strings decoded share the memory of one copy of the body.

// wireDecoder reads one JSON value from s, from position i on.
type wireDecoder struct {
	s string
	i int
}

// space skips white space.
func (d *wireDecoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// consume reads c, after white space, and reports whether it was there.
func (d *wireDecoder) consume(c byte) bool {
	d.space()
	if d.i < len(d.s) && d.s[d.i] == c {
		d.i++
		return true
	}
	return false
}

// end reports whether nothing but white space is left.
func (d *wireDecoder) end() bool {
	d.space()
	return d.i == len(d.s)
}

// str reads a string that has no escape sequence, control character or
// byte outside ASCII.
func (d *wireDecoder) str() (string, bool) {
	if !d.consume('"') {
		return "", false
	}
	start := d.i
	for ; d.i < len(d.s); d.i++ {
		switch c := d.s[d.i]; {
		case c == '"':
			v := d.s[start:d.i]
			d.i++
			return v, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return "", false
		}
	}
	return "", false
}

// strPtr reads a string into a new *string.
func (d *wireDecoder) strPtr() (*string, bool) {
	s, ok := d.str()
	if !ok {
		return nil, false
	}
	return &s, true
}

// boolean reads true or false into a new *bool.
func (d *wireDecoder) boolean() (*bool, bool) {
	d.space()
	var v bool
	switch rest := d.s[d.i:]; {
	case len(rest) >= 4 && rest[:4] == "true":
		v = true
		d.i += 4
	case len(rest) >= 5 && rest[:5] == "false":
		d.i += 5
	default:
		return nil, false
	}
	return &v, true
}

// binary reads a base64 string as encoding/json decodes a []byte.
func (d *wireDecoder) binary() ([]byte, bool) {
	s, ok := d.str()
	if !ok {
		return nil, false
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(b, []byte(s))
	if err != nil {
		return nil, false
	}
	return b[:n], true
}

// object reads an object, calling member with each member's name to read
// its value.
func (d *wireDecoder) object(member func(name string) bool) bool {
	if !d.consume('{') {
		return false
	}
	if d.consume('}') {
		return true
	}
	for {
		name, ok := d.str()
		if !ok || !d.consume(':') || !member(name) {
			return false
		}
		if !d.consume(',') {
			return d.consume('}')
		}
	}
}

// array reads an array, calling elem to read each element.
func (d *wireDecoder) array(elem func() bool) bool {
	if !d.consume('[') {
		return false
	}
	if d.consume(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if !d.consume(',') {
			return d.consume(']')
		}
	}
}

// once reports whether bit is not yet in *seen, and adds it.
func once(seen *uint32, bit uint32) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

// valueMembers are the members of an attribute value; value marks the
// i-th as seen with bit i.
var valueMembers = [...]string{"S", "N", "B", "BOOL", "NULL", "SS", "NS", "BS", "L", "M"}

// value reads an attribute value.
func (d *wireDecoder) value() (*server.AttributeValue, bool) {
	v := new(server.AttributeValue)
	var seen uint32
	ok := d.object(func(name string) bool {
		i := slices.Index(valueMembers[:], name)
		if i < 0 || !once(&seen, 1<<i) {
			return false
		}
		var ok bool
		switch name {
		case "S":
			v.S, ok = d.strPtr()
		case "N":
			v.N, ok = d.strPtr()
		case "B":
			v.B, ok = d.binary()
		case "BOOL":
			v.BOOL, ok = d.boolean()
		case "NULL":
			v.NULL, ok = d.boolean()
		case "SS":
			v.SS, ok = d.strings()
		case "NS":
			v.NS, ok = d.strings()
		case "BS":
			v.BS = [][]byte{}
			ok = d.array(func() bool {
				b, ok := d.binary()
				v.BS = append(v.BS, b)
				return ok
			})
		case "L":
			v.L = []*server.AttributeValue{}
			ok = d.array(func() bool {
				e, ok := d.value()
				v.L = append(v.L, e)
				return ok
			})
		case "M":
			v.M, ok = d.values()
		}
		return ok
	})
	return v, ok
}

// strings reads an array of strings.
func (d *wireDecoder) strings() ([]*string, bool) {
	out := []*string{}
	ok := d.array(func() bool {
		s, ok := d.strPtr()
		out = append(out, s)
		return ok
	})
	return out, ok
}

// values reads a map of attribute values (an item, a key, a map value or
// ExpressionAttributeValues).
func (d *wireDecoder) values() (map[string]*server.AttributeValue, bool) {
	out := map[string]*server.AttributeValue{}
	ok := d.object(func(name string) bool {
		if _, dup := out[name]; dup {
			return false
		}
		v, ok := d.value()
		out[name] = v
		return ok
	})
	return out, ok
}

// names reads ExpressionAttributeNames.
func (d *wireDecoder) names() (map[string]string, bool) {
	out := map[string]string{}
	ok := d.object(func(name string) bool {
		if _, dup := out[name]; dup {
			return false
		}
		s, ok := d.str()
		out[name] = s
		return ok
	})
	return out, ok
}

// itemFields points at the members of one of minidyn's single-item
// request types; a nil member is one the type does not have.
type itemFields struct {
	item, key, values             *map[string]*server.AttributeValue
	table, condition, update      **string
	names                         *map[string]string
	operator                      *ddbtypes.ConditionalOperator
	consumed                      *ddbtypes.ReturnConsumedCapacity
	metrics                       *ddbtypes.ReturnItemCollectionMetrics
	returnValues                  *ddbtypes.ReturnValue
	returnValuesOnConditionFailed *ddbtypes.ReturnValuesOnConditionCheckFailure
}

// request reads a single-item request into the members f points at.
func (d *wireDecoder) request(f itemFields) bool {
	var seen uint32
	return d.object(func(name string) bool {
		str := func(bit uint32, p *string) bool {
			if p == nil || !once(&seen, bit) {
				return false
			}
			s, ok := d.str()
			*p = s
			return ok
		}
		ptr := func(bit uint32, p **string) bool {
			if p == nil || !once(&seen, bit) {
				return false
			}
			var ok bool
			*p, ok = d.strPtr()
			return ok
		}
		vals := func(bit uint32, p *map[string]*server.AttributeValue) bool {
			if p == nil || !once(&seen, bit) {
				return false
			}
			var ok bool
			*p, ok = d.values()
			return ok
		}
		switch name {
		case "Item":
			return vals(1<<0, f.item)
		case "Key":
			return vals(1<<1, f.key)
		case "ExpressionAttributeValues":
			return vals(1<<2, f.values)
		case "TableName":
			return ptr(1<<3, f.table)
		case "ConditionExpression":
			return ptr(1<<4, f.condition)
		case "UpdateExpression":
			return ptr(1<<5, f.update)
		case "ExpressionAttributeNames":
			if f.names == nil || !once(&seen, 1<<6) {
				return false
			}
			var ok bool
			*f.names, ok = d.names()
			return ok
		case "ConditionalOperator":
			return str(1<<7, (*string)(f.operator))
		case "ReturnConsumedCapacity":
			return str(1<<8, (*string)(f.consumed))
		case "ReturnItemCollectionMetrics":
			return str(1<<9, (*string)(f.metrics))
		case "ReturnValues":
			return str(1<<10, (*string)(f.returnValues))
		case "ReturnValuesOnConditionCheckFailure":
			return str(1<<11, (*string)(f.returnValuesOnConditionFailed))
		}
		return false
	})
}

func putFields(in *server.PutItemInput) itemFields {
	return itemFields{
		item: &in.Item, values: &in.ExpressionAttributeValues, table: &in.TableName,
		condition: &in.ConditionExpression, names: &in.ExpressionAttributeNames,
		operator: &in.ConditionalOperator, consumed: &in.ReturnConsumedCapacity,
		metrics: &in.ReturnItemCollectionMetrics, returnValues: &in.ReturnValues,
		returnValuesOnConditionFailed: &in.ReturnValuesOnConditionCheckFailure,
	}
}

func updateFields(in *server.UpdateItemInput) itemFields {
	return itemFields{
		key: &in.Key, values: &in.ExpressionAttributeValues, table: &in.TableName,
		condition: &in.ConditionExpression, update: &in.UpdateExpression, names: &in.ExpressionAttributeNames,
		operator: &in.ConditionalOperator, consumed: &in.ReturnConsumedCapacity,
		metrics: &in.ReturnItemCollectionMetrics, returnValues: &in.ReturnValues,
		returnValuesOnConditionFailed: &in.ReturnValuesOnConditionCheckFailure,
	}
}

func deleteFields(in *server.DeleteItemInput) itemFields {
	return itemFields{
		key: &in.Key, values: &in.ExpressionAttributeValues, table: &in.TableName,
		condition: &in.ConditionExpression, names: &in.ExpressionAttributeNames,
		operator: &in.ConditionalOperator, consumed: &in.ReturnConsumedCapacity,
		metrics: &in.ReturnItemCollectionMetrics, returnValues: &in.ReturnValues,
		returnValuesOnConditionFailed: &in.ReturnValuesOnConditionCheckFailure,
	}
}

// fastDecodePut decodes a PutItem body, or reports false.
func fastDecodePut(body []byte) (*server.PutItemInput, bool) {
	in := new(server.PutItemInput)
	d := &wireDecoder{s: string(body)}
	if !d.request(putFields(in)) || !d.end() {
		return nil, false
	}
	return in, true
}

// fastDecodeTransaction decodes a TransactWriteItems body into req, or
// reports false; req is then to be decoded again from scratch.
func fastDecodeTransaction(body []byte, req *itemTransaction) bool {
	d := &wireDecoder{s: string(body)}
	var seen uint32
	ok := d.object(func(name string) bool {
		switch name {
		case "ClientRequestToken":
			if !once(&seen, 1<<0) {
				return false
			}
			var ok bool
			req.ClientRequestToken, ok = d.strPtr()
			return ok
		case "ReturnConsumedCapacity":
			if !once(&seen, 1<<1) {
				return false
			}
			var ok bool
			req.ReturnConsumedCapacity, ok = d.str()
			return ok
		case "TransactItems":
			if !once(&seen, 1<<2) {
				return false
			}
			req.TransactItems = []itemAction{}
			return d.array(func() bool {
				req.TransactItems = append(req.TransactItems, itemAction{})
				return d.action(&req.TransactItems[len(req.TransactItems)-1])
			})
		}
		return false
	})
	return ok && d.end()
}

// action reads one member of TransactItems.
func (d *wireDecoder) action(a *itemAction) bool {
	var seen uint32
	return d.object(func(name string) bool {
		switch name {
		case "Put":
			if !once(&seen, 1<<0) {
				return false
			}
			a.Put = new(server.PutItemInput)
			return d.request(putFields(a.Put))
		case "Update":
			if !once(&seen, 1<<1) {
				return false
			}
			a.Update = new(server.UpdateItemInput)
			return d.request(updateFields(a.Update))
		case "Delete":
			if !once(&seen, 1<<2) {
				return false
			}
			a.Delete = new(server.DeleteItemInput)
			return d.request(deleteFields(a.Delete))
		case "ConditionCheck":
			if !once(&seen, 1<<3) {
				return false
			}
			a.ConditionCheck = new(server.DeleteItemInput)
			return d.request(deleteFields(a.ConditionCheck))
		}
		return false
	})
}
