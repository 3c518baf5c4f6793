// Package emuload fills a table of the embedded DynamoDB emulator (package
// localstack) quickly, for benchmarks that need large tables: the emulator
// inserts each item it is sent in time proportional to the table's size,
// so loading 200,000 items through PutItem or BatchWriteItem takes
// minutes, where Put takes seconds.
//
// It speaks an operation of the emulator's own, not of DynamoDB: against
// any other endpoint Put fails. It is for building test fixtures outside
// what a test measures, never for code under test.
package emuload

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// target is the emulator's X-Amz-Target of its bulk load.
const target = "IdemkeyLocalstack.BulkPutItems"

// Put stores items in table of the embedded emulator served at url (an
// Endpoint's URL), each as an unconditional PutItem would, in one request:
// the emulator sorts the table's keys and rebuilds its secondary indexes
// once. An item without the table's key attributes fails the whole call
// before anything is stored.
func Put(ctx context.Context, url, table string, items []map[string]types.AttributeValue) error {
	return PutCopies(ctx, url, table, items, nil, nil)
}

// PutCopies is Put of items followed by one item per override: a copy of
// template with the override's attributes added or replaced. It sends
// template once, so that many items alike (a benchmark's filler) cost
// little to encode.
func PutCopies(ctx context.Context, url, table string, items []map[string]types.AttributeValue,
	template map[string]types.AttributeValue, overrides []map[string]types.AttributeValue) error {
	encodeAll := func(list []map[string]types.AttributeValue) ([]map[string]any, error) {
		wire := make([]map[string]any, len(list))
		for i, it := range list {
			m, err := encodeItem(it)
			if err != nil {
				return nil, fmt.Errorf("emuload: item %d: %w", i, err)
			}
			wire[i] = m
		}
		return wire, nil
	}
	wireItems, err := encodeAll(items)
	if err != nil {
		return err
	}
	wireOverrides, err := encodeAll(overrides)
	if err != nil {
		return err
	}
	in := struct {
		TableName string
		Items     []map[string]any
		Template  map[string]any   `json:",omitempty"`
		Overrides []map[string]any `json:",omitempty"`
	}{TableName: table, Items: wireItems, Overrides: wireOverrides}
	if template != nil {
		if in.Template, err = encodeItem(template); err != nil {
			return fmt.Errorf("emuload: template: %w", err)
		}
	}
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("emuload: %w", err)
	}
	n := len(items) + len(overrides)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("emuload: %w", err)
	}
	req.Header.Set("X-Amz-Target", target)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("emuload: %w", err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("emuload: loading %d items into %s: HTTP %d: %s", n, table, resp.StatusCode, answer)
	}
	return nil
}

func encodeItem(item map[string]types.AttributeValue) (map[string]any, error) {
	out := make(map[string]any, len(item))
	for k, v := range item {
		e, err := encodeValue(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		out[k] = e
	}
	return out, nil
}

// encodeValue returns v in the DynamoDB JSON wire form.
func encodeValue(v types.AttributeValue) (map[string]any, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": v.Value}, nil
	case *types.AttributeValueMemberN:
		return map[string]any{"N": v.Value}, nil
	case *types.AttributeValueMemberB:
		return map[string]any{"B": base64.StdEncoding.EncodeToString(v.Value)}, nil
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}, nil
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": v.Value}, nil
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": v.Value}, nil
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": v.Value}, nil
	case *types.AttributeValueMemberBS:
		bs := make([]string, len(v.Value))
		for i, b := range v.Value {
			bs[i] = base64.StdEncoding.EncodeToString(b)
		}
		return map[string]any{"BS": bs}, nil
	case *types.AttributeValueMemberL:
		l := make([]any, len(v.Value))
		for i, e := range v.Value {
			x, err := encodeValue(e)
			if err != nil {
				return nil, err
			}
			l[i] = x
		}
		return map[string]any{"L": l}, nil
	case *types.AttributeValueMemberM:
		m, err := encodeItem(v.Value)
		if err != nil {
			return nil, err
		}
		return map[string]any{"M": m}, nil
	}
	return nil, fmt.Errorf("unsupported attribute value %T", v)
}
