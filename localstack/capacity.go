package localstack

import (
	"encoding/json"
	"math"
)

// Consumed capacity. DynamoDB reports the capacity units a call consumed
// when it asks (ReturnConsumedCapacity TOTAL or INDEXES); minidyn never
// does. The front adds an estimate by DynamoDB's rules of size:
//
//   - reads (GetItem, Scan, Query): one unit per 4 KB of the items returned,
//     half that for eventually consistent reads, at least 0.5 (a Scan or
//     Query with a filter is charged for the items it returned, not for
//     the items it read: an underestimate);
//   - writes (PutItem, UpdateItem, DeleteItem): one unit per 1 KB of the
//     request's item, at least one;
//   - TransactWriteItems: twice the writes of its actions.
//
// It is an estimate for code that reports capacity (the sweeper), not a
// bill.

type capacityRequest struct {
	TableName              string          `json:"TableName"`
	ReturnConsumedCapacity string          `json:"ReturnConsumedCapacity"`
	ConsistentRead         bool            `json:"ConsistentRead"`
	Item                   json.RawMessage `json:"Item"`
	TransactItems          []struct {
		Put *struct {
			TableName string          `json:"TableName"`
			Item      json.RawMessage `json:"Item"`
		} `json:"Put"`
		Update, Delete, ConditionCheck *struct {
			TableName string `json:"TableName"`
		}
	} `json:"TransactItems"`
}

type consumed struct {
	TableName          string  `json:"TableName"`
	CapacityUnits      float64 `json:"CapacityUnits"`
	ReadCapacityUnits  float64 `json:"ReadCapacityUnits,omitempty"`
	WriteCapacityUnits float64 `json:"WriteCapacityUnits,omitempty"`
}

// addConsumedCapacity adds ConsumedCapacity to a successful response of op
// when the request asked for it.
func addConsumedCapacity(op string, body []byte, resp *response) {
	if !resp.ok() {
		return
	}
	var req capacityRequest
	if json.Unmarshal(body, &req) != nil || (req.ReturnConsumedCapacity != "TOTAL" && req.ReturnConsumedCapacity != "INDEXES") {
		return
	}
	var out map[string]json.RawMessage
	if json.Unmarshal(resp.body.Bytes(), &out) != nil || out == nil {
		return
	}
	readUnits := func(n int) float64 {
		u := math.Ceil(float64(n) / 4096)
		if !req.ConsistentRead {
			u /= 2
		}
		return math.Max(u, 0.5)
	}
	writeUnits := func(n int) float64 { return math.Max(math.Ceil(float64(n)/1024), 1) }
	var value any
	switch op {
	case "GetItem":
		u := readUnits(len(out["Item"]))
		value = consumed{TableName: req.TableName, CapacityUnits: u, ReadCapacityUnits: u}
	case "Scan", "Query":
		u := readUnits(len(out["Items"]))
		value = consumed{TableName: req.TableName, CapacityUnits: u, ReadCapacityUnits: u}
	case "PutItem", "UpdateItem", "DeleteItem":
		u := writeUnits(len(req.Item))
		value = consumed{TableName: req.TableName, CapacityUnits: u, WriteCapacityUnits: u}
	case "TransactWriteItems":
		per := map[string]float64{}
		var order []string
		for _, it := range req.TransactItems {
			table, size := "", 0
			switch {
			case it.Put != nil:
				table, size = it.Put.TableName, len(it.Put.Item)
			case it.Update != nil:
				table = it.Update.TableName
			case it.Delete != nil:
				table = it.Delete.TableName
			case it.ConditionCheck != nil:
				table = it.ConditionCheck.TableName
			}
			if _, seen := per[table]; !seen {
				order = append(order, table)
			}
			per[table] += 2 * writeUnits(size)
		}
		list := make([]consumed, 0, len(order))
		for _, t := range order {
			list = append(list, consumed{TableName: t, CapacityUnits: per[t], WriteCapacityUnits: per[t]})
		}
		value = list
	default:
		return
	}
	b, err := json.Marshal(value)
	if err != nil {
		return
	}
	out["ConsumedCapacity"] = b
	merged, err := json.Marshal(out)
	if err != nil {
		return
	}
	resp.body.Reset()
	resp.body.Write(merged)
}
