package localstack

import (
	"maps"
	"net/http"
	"regexp"
	"slices"

	"github.com/truora/minidyn/types"
)

type keyElement struct{ AttributeName, KeyType string }

type projection struct {
	ProjectionType   string
	NonKeyAttributes []string `json:",omitempty"`
}

type indexDefinition struct {
	IndexName  string
	KeySchema  []keyElement
	Projection projection
}

type attributeDefinition struct{ AttributeName, AttributeType string }

type createTableInput struct {
	TableName              string
	AttributeDefinitions   []attributeDefinition
	KeySchema              []keyElement
	GlobalSecondaryIndexes []indexDefinition
	BillingMode            string
}

var tableNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,255}$`)

func (e *emulator) createTable(body []byte) (any, error) {
	var in createTableInput
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if !tableNamePattern.MatchString(in.TableName) {
		return nil, validation("1 validation error detected: Value '%s' at 'tableName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+", in.TableName)
	}
	if e.tables[in.TableName] != nil {
		return nil, &apiError{status: http.StatusBadRequest, code: "ResourceInUseException", message: "Table already exists: " + in.TableName}
	}
	t := &table{name: in.TableName, created: e.now(), attrs: map[string]string{}, indexes: map[string]*view{},
		items: map[string]map[string]*types.Item{}, billing: in.BillingMode}
	if t.billing == "" {
		t.billing = "PROVISIONED"
	}
	if err := t.define(in.AttributeDefinitions); err != nil {
		return nil, err
	}
	x, err := t.newView("", in.KeySchema, projection{ProjectionType: "ALL"})
	if err != nil {
		return nil, err
	}
	t.primary = x
	for _, def := range in.GlobalSecondaryIndexes {
		if err := t.addIndex(def); err != nil {
			return nil, err
		}
	}
	e.tables[t.name] = t
	return map[string]any{"TableDescription": t.describe("ACTIVE")}, nil
}

// define adds attribute definitions to t.
func (t *table) define(defs []attributeDefinition) error {
	for _, d := range defs {
		switch d.AttributeType {
		case "S", "N", "B":
			t.attrs[d.AttributeName] = d.AttributeType
		default:
			return validation("1 validation error detected: Value '%s' at 'attributeDefinitions.member.attributeType' failed to satisfy constraint: Member must satisfy enum value set: [B, N, S]", d.AttributeType)
		}
	}
	return nil
}

// newView checks a key schema against t's attribute definitions.
func (t *table) newView(name string, schema []keyElement, p projection) (*view, error) {
	x := &view{name: name, project: p.ProjectionType, include: p.NonKeyAttributes,
		parts: map[string]map[string]struct{}{}, ordered: map[string][]sorted{}}
	for i, k := range schema {
		switch {
		case i == 0 && k.KeyType == "HASH":
			x.hash = k.AttributeName
		case i == 1 && k.KeyType == "RANGE":
			x.rng = k.AttributeName
		default:
			return nil, validation("Invalid KeySchema: The first KeySchemaElement is not a HASH key type")
		}
		if t.attrs[k.AttributeName] == "" {
			return nil, validation("One or more parameter values were invalid: Some index key attributes are not defined in AttributeDefinitions. Keys: [%s], AttributeDefinitions: %v", k.AttributeName, t.attrs)
		}
	}
	if x.hash == "" {
		return nil, validation("1 validation error detected: Value null at 'keySchema' failed to satisfy constraint: Member must not be null")
	}
	switch x.project {
	case "ALL", "KEYS_ONLY", "INCLUDE":
	default:
		return nil, validation("One or more parameter values were invalid: Unknown ProjectionType: %s", x.project)
	}
	return x, nil
}

// addIndex adds a global secondary index to t and fills it with t's items.
func (t *table) addIndex(def indexDefinition) error {
	if t.indexes[def.IndexName] != nil {
		return validation("One or more parameter values were invalid: Duplicate index name: %s", def.IndexName)
	}
	x, err := t.newView(def.IndexName, def.KeySchema, def.Projection)
	if err != nil {
		return err
	}
	for key, it := range t.items {
		x.place(t, key, it)
	}
	t.indexes[x.name] = x
	return nil
}

// describe is t's TableDescription; its indexes are always ACTIVE.
func (t *table) describe(status string) map[string]any {
	defs := []attributeDefinition{}
	for _, name := range slices.Sorted(maps.Keys(t.attrs)) {
		defs = append(defs, attributeDefinition{name, t.attrs[name]})
	}
	arn := "arn:aws:dynamodb:us-east-1:000000000000:table/" + t.name
	d := map[string]any{
		"TableName": t.name, "TableStatus": status, "TableArn": arn, "TableId": t.name,
		"CreationDateTime": float64(t.created.UnixMilli()) / 1000, "AttributeDefinitions": defs,
		"KeySchema": t.primary.schema(), "ItemCount": len(t.items), "TableSizeBytes": t.bytes,
		"BillingModeSummary":    map[string]string{"BillingMode": t.billing},
		"ProvisionedThroughput": noThroughput,
	}
	var global []map[string]any
	for _, name := range t.indexNames() {
		x := t.indexes[name]
		desc := map[string]any{"IndexName": name, "KeySchema": x.schema(), "IndexArn": arn + "/index/" + name,
			"Projection": projection{x.project, x.include}, "ItemCount": x.count, "IndexSizeBytes": 0,
			"IndexStatus": "ACTIVE", "ProvisionedThroughput": noThroughput}
		global = append(global, desc)
	}
	if global != nil {
		d["GlobalSecondaryIndexes"] = global
	}
	return d
}

// noThroughput is every table's: no capacity limits are modelled.
var noThroughput = map[string]int64{"ReadCapacityUnits": 0, "WriteCapacityUnits": 0, "NumberOfDecreasesToday": 0}

func (x *view) schema() []keyElement {
	s := []keyElement{{x.hash, "HASH"}}
	if x.rng != "" {
		s = append(s, keyElement{x.rng, "RANGE"})
	}
	return s
}

func (e *emulator) namedTable(body []byte) (*table, error) {
	var in struct{ TableName string }
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	return e.table(in.TableName)
}

func (e *emulator) describeTable(body []byte) (any, error) {
	t, err := e.namedTable(body)
	if err != nil {
		return nil, err
	}
	return map[string]any{"Table": t.describe("ACTIVE")}, nil
}

func (e *emulator) deleteTable(body []byte) (any, error) {
	t, err := e.namedTable(body)
	if err != nil {
		return nil, err
	}
	delete(e.tables, t.name)
	return map[string]any{"TableDescription": t.describe("DELETING")}, nil
}

func (e *emulator) updateTable(body []byte) (any, error) {
	var in struct {
		TableName                   string
		AttributeDefinitions        []attributeDefinition
		GlobalSecondaryIndexUpdates []struct {
			Create *indexDefinition
		}
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	t, err := e.table(in.TableName)
	if err != nil {
		return nil, err
	}
	if err := t.define(in.AttributeDefinitions); err != nil {
		return nil, err
	}
	for _, u := range in.GlobalSecondaryIndexUpdates {
		if u.Create != nil {
			if err := t.addIndex(*u.Create); err != nil {
				return nil, err
			}
		}
	}
	return map[string]any{"TableDescription": t.describe("UPDATING")}, nil
}

// listTables answers one page, with every table.
func (e *emulator) listTables([]byte) (any, error) {
	return map[string]any{"TableNames": slices.Sorted(maps.Keys(e.tables))}, nil
}

func (e *emulator) updateTimeToLive(body []byte) (any, error) {
	var in struct {
		TableName               string
		TimeToLiveSpecification *struct {
			AttributeName string
			Enabled       *bool
		}
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	t, err := e.table(in.TableName)
	if err != nil {
		return nil, err
	}
	spec := in.TimeToLiveSpecification
	if spec == nil || spec.AttributeName == "" || spec.Enabled == nil {
		return nil, validation("1 validation error detected: Value null at 'timeToLiveSpecification' failed to satisfy constraint: Member must not be null")
	}
	on := t.ttlAttribute != ""
	switch {
	case *spec.Enabled && on && t.ttlAttribute == spec.AttributeName:
		return nil, validation("TimeToLive is already enabled")
	case *spec.Enabled && on, !*spec.Enabled && on && t.ttlAttribute != spec.AttributeName:
		return nil, validation("TimeToLive is active on a different AttributeName")
	case !*spec.Enabled && !on:
		return nil, validation("TimeToLive is already disabled")
	}
	t.ttlAttribute = ""
	if *spec.Enabled {
		t.ttlAttribute = spec.AttributeName
	}
	return map[string]any{"TimeToLiveSpecification": spec}, nil
}

func (e *emulator) describeTimeToLive(body []byte) (any, error) {
	t, err := e.namedTable(body)
	if err != nil {
		return nil, err
	}
	d := map[string]string{"TimeToLiveStatus": "DISABLED"}
	if t.ttlAttribute != "" {
		d = map[string]string{"TimeToLiveStatus": "ENABLED", "AttributeName": t.ttlAttribute}
	}
	return map[string]any{"TimeToLiveDescription": d}, nil
}
