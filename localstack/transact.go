package localstack

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"strings"
	"time"
)

// clientRequestTokenWindow is how long a repeat of a successful
// TransactWriteItems with its ClientRequestToken is answered unapplied.
const clientRequestTokenWindow = 10 * time.Minute

type tokenRecord struct {
	digest  [sha256.Size]byte // of the request without its token
	expires time.Time
}

type transactAction struct {
	Put, Update, Delete, ConditionCheck *writeRequest
}

func (e *emulator) transactWriteItems(body []byte) (any, error) {
	var in struct {
		TransactItems          []transactAction
		ClientRequestToken     string
		ReturnConsumedCapacity string
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if n := len(in.TransactItems); n < 1 || n > 100 {
		return nil, validation("1 validation error detected: Value '[]' at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to 100 and greater than or equal to 1")
	}
	var digest [sha256.Size]byte
	now := e.now()
	if in.ClientRequestToken != "" {
		if len(in.ClientRequestToken) > 36 {
			return nil, validation("1 validation error detected: Value '%s' at 'clientRequestToken' failed to satisfy constraint: Member must have length less than or equal to 36", in.ClientRequestToken)
		}
		// Re-encoded, maps sorted: equal whatever order they came in.
		canonical, err := json.Marshal([]any{in.TransactItems, in.ReturnConsumedCapacity})
		if err != nil {
			return nil, err
		}
		digest = sha256.Sum256(canonical)
		for len(e.tokenOrder) > 0 && !now.Before(e.tokens[e.tokenOrder[0]].expires) {
			delete(e.tokens, e.tokenOrder[0])
			e.tokenOrder = e.tokenOrder[1:]
		}
		if rec, ok := e.tokens[in.ClientRequestToken]; ok {
			if rec.digest != digest {
				return nil, &apiError{status: http.StatusBadRequest, code: "IdempotentParameterMismatchException",
					message: "Specified idempotent parameters do not match the original request"}
			}
			return map[string]any{}, nil
		}
	}

	changes := make([]*change, len(in.TransactItems))
	reasons := make([]reason, len(in.TransactItems))
	seen := map[string]bool{}
	failed := false
	for i, a := range in.TransactItems {
		op, r, n := "", (*writeRequest)(nil), 0
		for name, w := range map[string]*writeRequest{"Put": a.Put, "Update": a.Update, "Delete": a.Delete, "ConditionCheck": a.ConditionCheck} {
			if w != nil {
				op, r, n = name, w, n+1
			}
		}
		if n != 1 {
			return nil, validation("TransactItems can only contain one of Check, Put, Update or Delete")
		}
		c, err := e.prepare(op, r)
		reasons[i] = reason{Code: "None"}
		switch {
		case errors.Is(err, errConditionFailed):
			failed = true
			reasons[i] = reason{Code: "ConditionalCheckFailed", Message: err.Error()}
			if r.ReturnValuesOnConditionCheckFailure == "ALL_OLD" {
				reasons[i].Item = c.old
			}
		case err != nil:
			return nil, err
		}
		if seen[r.TableName+"\x00"+c.key] {
			return nil, validation("Transaction request cannot include multiple operations on one item")
		}
		seen[r.TableName+"\x00"+c.key] = true
		changes[i] = c
	}
	if failed {
		codes := make([]string, len(reasons))
		for i, r := range reasons {
			codes[i] = r.Code
		}
		return nil, &apiError{status: http.StatusBadRequest, code: "TransactionCanceledException", reasons: reasons,
			message: "Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]"}
	}
	cap := newCapacity(in.ReturnConsumedCapacity)
	for i, c := range changes {
		if in.TransactItems[i].ConditionCheck != nil {
			cap.read(c.t.name, "", itemSize(c.old), true)
			cap.read(c.t.name, "", itemSize(c.old), true)
			continue
		}
		c.apply()
		cap.write(c, 2)
	}
	if in.ClientRequestToken != "" {
		e.tokens[in.ClientRequestToken] = tokenRecord{digest: digest, expires: e.now().Add(clientRequestTokenWindow)}
		e.tokenOrder = append(e.tokenOrder, in.ClientRequestToken)
	}
	out := map[string]any{}
	cap.add(out, true)
	return out, nil
}

func (e *emulator) batchWriteItem(body []byte) (any, error) {
	var in struct {
		RequestItems map[string][]struct {
			PutRequest    *struct{ Item item }
			DeleteRequest *struct{ Key item }
		}
		ReturnConsumedCapacity string
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	var changes []*change
	for name, requests := range in.RequestItems {
		for _, w := range requests {
			var c *change
			var err error
			switch {
			case w.PutRequest != nil:
				c, err = e.prepare("Put", &writeRequest{TableName: name, Item: w.PutRequest.Item})
			case w.DeleteRequest != nil:
				c, err = e.prepare("Delete", &writeRequest{TableName: name, Key: w.DeleteRequest.Key})
			default:
				err = validation("Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes")
			}
			if err != nil {
				return nil, err
			}
			changes = append(changes, c)
		}
	}
	cap := newCapacity(in.ReturnConsumedCapacity)
	for _, c := range changes {
		c.apply()
		cap.write(c, 1)
	}
	out := map[string]any{"UnprocessedItems": map[string]any{}}
	cap.add(out, true)
	return out, nil
}

// bulkLoadTarget is the emulator's own operation for internal/emuload:
// Items, and a copy of Template per override with its attributes, are put
// unconditionally, all or none.
const bulkLoadTarget = "IdemkeyLocalstack.BulkPutItems"

func (e *emulator) bulkPut(body []byte) (any, error) {
	var in struct {
		TableName string
		Items     []item
		Template  item
		Overrides []item
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	for _, o := range in.Overrides {
		it := maps.Clone(in.Template)
		maps.Copy(it, o)
		in.Items = append(in.Items, it)
	}
	var changes []*change
	for _, it := range in.Items {
		c, err := e.prepare("Put", &writeRequest{TableName: in.TableName, Item: it})
		if err != nil {
			return nil, err
		}
		changes = append(changes, c)
	}
	for _, c := range changes {
		c.apply()
	}
	return map[string]int{"Count": len(changes)}, nil
}
