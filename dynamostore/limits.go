package dynamostore

// Bounds on what a key record stores from the request. A record is one
// DynamoDB item (400 KB at most), so a front door refuses a request whose
// method or path exceeds these bounds before it claims a key: such a
// request is never executed and its key is never consumed.
const (
	// MaxMethodBytes is the length, in bytes, of the longest request
	// method a key record stores.
	MaxMethodBytes = 32

	// MaxPathBytes is the length, in bytes, of the longest request path
	// a key record stores.
	MaxPathBytes = 8192
)
