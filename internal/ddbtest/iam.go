package ddbtest

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Permissions records the IAM actions a client's calls need, per table:
// dynamodb:<Operation> for a plain call, and for a transaction the action
// of each of its items (Put → PutItem, Update → UpdateItem, Delete →
// DeleteItem, ConditionCheck → ConditionCheckItem), as IAM evaluates them.
type Permissions struct {
	mu   sync.Mutex
	seen map[string]map[string]bool // table → action set
}

// NewPermissions returns an empty recorder.
func NewPermissions() *Permissions { return &Permissions{seen: map[string]map[string]bool{}} }

// Install adds the recorder to a client's middleware.
func (p *Permissions) Install(o *dynamodb.Options) {
	initialize(o, "idemkeyPermissions", func(_ context.Context, params any) { p.record(params) })
}

func (p *Permissions) add(table *string, action string) {
	t := aws.ToString(table)
	if p.seen[t] == nil {
		p.seen[t] = map[string]bool{}
	}
	p.seen[t]["dynamodb:"+action] = true
}

func (p *Permissions) record(params any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch in := params.(type) {
	case *dynamodb.PutItemInput:
		p.add(in.TableName, "PutItem")
	case *dynamodb.GetItemInput:
		p.add(in.TableName, "GetItem")
	case *dynamodb.DeleteItemInput:
		p.add(in.TableName, "DeleteItem")
	case *dynamodb.UpdateItemInput:
		p.add(in.TableName, "UpdateItem")
	case *dynamodb.QueryInput:
		p.add(in.TableName, "Query")
	case *dynamodb.ScanInput:
		p.add(in.TableName, "Scan")
	case *dynamodb.DescribeTableInput:
		p.add(in.TableName, "DescribeTable")
	case *dynamodb.CreateTableInput:
		p.add(in.TableName, "CreateTable")
	case *dynamodb.UpdateTimeToLiveInput:
		p.add(in.TableName, "UpdateTimeToLive")
	case *dynamodb.DescribeTimeToLiveInput:
		p.add(in.TableName, "DescribeTimeToLive")
	case *dynamodb.BatchWriteItemInput:
		for t := range in.RequestItems {
			p.add(aws.String(t), "BatchWriteItem")
		}
	case *dynamodb.TransactWriteItemsInput:
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				p.add(it.Put.TableName, "PutItem")
			case it.Update != nil:
				p.add(it.Update.TableName, "UpdateItem")
			case it.Delete != nil:
				p.add(it.Delete.TableName, "DeleteItem")
			case it.ConditionCheck != nil:
				p.add(it.ConditionCheck.TableName, "ConditionCheckItem")
			}
		}
	}
}

// Actions returns the sorted actions recorded on table.
func (p *Permissions) Actions(table string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(maps.Keys(p.seen[table]))
}

// Tables returns the tables seen, sorted.
func (p *Permissions) Tables() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(maps.Keys(p.seen))
}
