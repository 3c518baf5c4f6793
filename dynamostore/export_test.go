package dynamostore

// CountAttempts is the Store's own attempt counter, for the external tests.
var CountAttempts = countAttempts
