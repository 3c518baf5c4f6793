// Package txn stages a handler's DynamoDB writes so that they commit in one
// TransactWriteItems together with the idempotency key record.
//
// This is idemkey's first rule in DynamoDB form: the key record and the
// effect are atomic with respect to each other. A handler does not call
// DynamoDB for its effects; it stages them on the Tx found in its context,
//
//	tx, _ := txn.FromContext(r.Context())
//	tx.Put(types.Put{TableName: aws.String("payments"), Item: item,
//		ConditionExpression: aws.String("attribute_not_exists(id)")})
//
// and the protocol commits them after the handler returns, with the key
// record as the transaction's first action (the fence). Either the key
// record and every staged write exist afterwards, or none of them does.
//
// The commit rejects more than MaxActions actions before calling DynamoDB,
// retries transaction conflicts with bounded backoff (the SDK does not),
// and reports DynamoDB's cancellation reasons as the typed errors of this
// package. Every staged action may target any table of the same account
// and region; DynamoDB forbids two actions on one item in a transaction.
// A request that carries no key still finds a Tx in its context from the
// front doors, and its staged writes commit in one TransactWriteItems
// without a key record.
//
// Tx holds SDK types (types.Put, types.Update, ...), so expressions built
// with the feature/dynamodb/expression package drop in unchanged.
//
// The public surface: Tx (New, FromContext and its staging methods),
// Options (the commit's retries, set through dynamostore.Options.Txn),
// MaxActions, and the errors a commit reports.
package txn
