package localstack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// tableRequest is the part of a request that names a table.
type tableRequest struct {
	TableName *string
}

// afterTableOperation tracks created and deleted tables and adds TableStatus
// to the table description in a successful response.
func (f *front) afterTableOperation(op string, body []byte, resp *response) error {
	if !resp.ok() {
		return nil
	}
	var req tableRequest
	if err := json.Unmarshal(body, &req); err != nil || req.TableName == nil {
		return nil // minidyn accepted it, so this cannot happen
	}
	name := *req.TableName
	member, status := "Table", "ACTIVE"
	switch op {
	case "CreateTable":
		f.tables[name] = struct{}{}
		delete(f.ttl, name)
		delete(f.keys, name)
		member = "TableDescription"
	case "DeleteTable":
		delete(f.tables, name)
		delete(f.ttl, name)
		delete(f.keys, name)
		member, status = "TableDescription", "DELETING"
	case "UpdateTable":
		if t := f.eng.table(name); t != nil && strings.Contains(string(body), `"GlobalSecondaryIndexUpdates"`) {
			rebuildIndexes(t) // backfill a created index
		}
		member, status = "TableDescription", "UPDATING"
	}
	if f.opts.DisableTableStatus {
		return nil
	}
	out, err := decodeObject(resp.body.Bytes())
	if err != nil {
		return err
	}
	desc, err := decodeObject(out[member])
	if err != nil {
		return fmt.Errorf("%s: %w", member, err)
	}
	var current string
	_ = json.Unmarshal(desc["TableStatus"], &current)
	if current != "" {
		return nil
	}
	if err := desc.set("TableStatus", status); err != nil {
		return err
	}
	if err := out.set(member, desc); err != nil {
		return err
	}
	return resp.setJSON(out)
}

// maxListTablesLimit is DynamoDB's largest (and default) ListTables Limit.
const maxListTablesLimit = 100

// listTables answers ListTables from the tables created and not deleted
// through this front, in ascending order of name.
func (f *front) listTables(body []byte) *response {
	var in struct {
		ExclusiveStartTableName *string
		Limit                   *int64
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return errorResponse(http.StatusBadRequest, codeSerialization, err.Error())
	}
	limit := maxListTablesLimit
	if in.Limit != nil {
		switch l := *in.Limit; {
		case l < 1:
			return validationErrors([]string{fmt.Sprintf("Value '%d' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", l)})
		case l > maxListTablesLimit:
			return validationErrors([]string{fmt.Sprintf("Value '%d' at 'limit' failed to satisfy constraint: Member must have value less than or equal to %d", l, maxListTablesLimit)})
		default:
			limit = int(l)
		}
	}
	names := make([]string, 0, len(f.tables))
	for name := range f.tables {
		if in.ExclusiveStartTableName == nil || name > *in.ExclusiveStartTableName {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := struct {
		TableNames             []string
		LastEvaluatedTableName *string `json:",omitempty"`
	}{TableNames: names}
	if len(names) > limit {
		out.TableNames = names[:limit]
		out.LastEvaluatedTableName = &names[limit-1]
	}
	return jsonResponse(out)
}
