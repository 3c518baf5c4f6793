// Package emuload fills a table of the embedded DynamoDB emulator (package
// localstack) in one request, for benchmarks that need large tables. It
// speaks an operation of the emulator's own, which any other endpoint
// refuses; it builds fixtures, never code under test.
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

const target = "IdemkeyLocalstack.BulkPutItems"

// PutCopies stores items, then one item per override (a copy of template
// with the override's attributes added or replaced), in table of the
// embedded emulator served at url (an Endpoint's URL), each as an
// unconditional PutItem would. An item without the table's key fails the
// whole call before anything is stored.
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
		return fmt.Errorf("emuload: loading %d items into %s: HTTP %d: %s", len(items)+len(overrides), table, resp.StatusCode, answer)
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
