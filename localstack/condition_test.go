package localstack

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/truora/minidyn/interpreter"
	"github.com/truora/minidyn/server"
	mtypes "github.com/truora/minidyn/types"
)

// condCase is a condition with the request's names and values and the
// stored item it is evaluated against.
type condCase struct {
	expr   string
	names  map[string]string
	values map[string]*mtypes.Item
	item   map[string]*mtypes.Item
}

// condGen draws condCases from a source of choices: a fuzzer's bytes, or a
// seeded generator.
type condGen struct {
	data  []byte
	rnd   *rand.Rand
	used  map[string]bool
	clean bool // draw only what the engine evaluates natively, mostly
}

// pick returns a choice in [0, n).
func (g *condGen) pick(n int) int {
	if g.rnd != nil {
		return g.rnd.IntN(n)
	}
	if len(g.data) == 0 {
		return 0
	}
	b := g.data[0]
	g.data = g.data[1:]
	return int(b) % n
}

func (g *condGen) from(choices ...string) string { return choices[g.pick(len(choices))] }

// operand draws a path or a value, mostly placeholders the case declares;
// sometimes a reserved word, a document path or an undeclared placeholder.
func (g *condGen) operand() string {
	choices := []string{"#a", "#b", "#c", "x", "y", ":s", ":n", ":b", ":t", ":s", ":n", "#a", "#b",
		"state", "#a.b", "#z", ":z", "a[0]", "1x", "size(#a)"}
	if g.clean {
		choices = choices[:13]
	}
	s := g.from(choices...)
	if strings.HasPrefix(s, "#") || strings.HasPrefix(s, ":") {
		g.used[strings.SplitN(s, ".", 2)[0]] = true
	}
	return s
}

// cond draws a condition of at most depth levels of nesting.
func (g *condGen) cond(depth int) string {
	n := 9
	if depth <= 0 {
		n = 4
	}
	kind := g.pick(n)
	if g.clean && kind == 3 {
		kind = 0
	}
	switch kind {
	case 0, 1:
		return g.operand() + " " + g.from("=", "<>", "<", "<=", ">", ">=", "=", "<>") + " " + g.operand()
	case 2:
		return g.from("attribute_exists", "attribute_not_exists", "attribute_exists", "ATTRIBUTE_EXISTS", "begins_with") + "(" + g.operand() + ")"
	case 3:
		return g.from("#a BETWEEN :n AND :n", "#a IN (:s, :n)", "#a", "", "(#a = :s", "#a = = :s", "NOT #a = :s", "#a = :s,", "attribute_exists(#a, #b)")
	case 4, 5:
		return g.cond(depth-1) + " " + g.from("AND", "OR", "and", "Or", "AND", "OR") + " " + g.cond(depth-1)
	case 6:
		return "NOT " + g.cond(depth-1)
	case 7:
		return g.from("NOT ", "", "NOT NOT ") + "(" + g.cond(depth-1) + ")"
	}
	return g.from("\t", "\n", "  ", "") + g.cond(depth-1) + g.from(" ", "\r", "")
}

// value draws an attribute value of any kind, some of them values
// minidyn's interpreter cannot convert.
func (g *condGen) value() *mtypes.Item {
	s := func(v string) *string { return &v }
	kind := g.pick(16)
	if g.clean {
		switch kind {
		case 2, 3:
			return &mtypes.Item{N: s(g.from("1", "2", "1.0", "-3", "1e2", "100", "1796126948075"))}
		case 4, 5:
			return &mtypes.Item{B: [][]byte{{1}, {2}, {1, 0}}[g.pick(3)]}
		case 7:
			return &mtypes.Item{NULL: aws.Bool(true)}
		case 9, 11, 13:
			kind = 0
		}
	}
	switch kind {
	case 0, 1:
		return &mtypes.Item{S: s(g.from("", "x", "y", "pay", "x"))}
	case 2, 3:
		return &mtypes.Item{N: s(g.from("1", "2", "1.0", "-3", "1e2", "100", "1796126948075", "abc", "NaN", "0x1p3"))}
	case 4, 5:
		return &mtypes.Item{B: [][]byte{nil, {1}, {2}, {1, 0}}[g.pick(4)]}
	case 6:
		return &mtypes.Item{BOOL: aws.Bool(g.pick(2) == 0)}
	case 7:
		return &mtypes.Item{NULL: aws.Bool(g.pick(3) != 0)}
	case 8:
		return &mtypes.Item{M: map[string]*mtypes.Item{"k": {S: s("v")}}}
	case 9:
		return &mtypes.Item{L: []*mtypes.Item{{N: s(g.from("1", "x"))}}}
	case 10:
		return &mtypes.Item{SS: []*string{s("a"), s("b")}}
	case 11:
		return &mtypes.Item{NS: []*string{s(g.from("1", "y"))}}
	case 12:
		return &mtypes.Item{BS: [][]byte{{1}}}
	case 13:
		return &mtypes.Item{}
	}
	return &mtypes.Item{S: s("x")}
}

// draw returns a case: its expression, names and values declaring what
// the expression uses (with now and then one missing, one extra or an odd
// attribute name), and a stored item or none.
func (g *condGen) draw() condCase {
	g.used = map[string]bool{}
	g.clean = g.pick(4) != 0
	c := condCase{expr: g.cond(3), names: map[string]string{}, values: map[string]*mtypes.Item{}}
	for _, p := range sortedKeys(g.used) {
		if !g.clean && g.pick(5) == 0 {
			continue // undeclared
		}
		if p[0] == '#' {
			c.names[p] = strings.TrimPrefix(p, "#")
			if g.pick(12) == 0 {
				// Not a target that is itself a placeholder: minidyn
				// resolves those recursively, and "#a": "#a" never ends.
				c.names[p] = g.from("a.b", ":s", "", "x", "a[0]", "a#")
			}
		} else {
			c.values[p] = g.value()
			if k := valueKind(c.values[p]); g.clean && k != kindString && k != kindNumber && k != kindBinary {
				c.values[p] = &mtypes.Item{S: aws.String(g.from("x", "y"))}
			}
		}
	}
	if !g.clean && g.pick(4) == 0 {
		c.names["#unused"] = "u"
	}
	if !g.clean && g.pick(4) == 0 {
		c.values[":unused"] = &mtypes.Item{S: aws.String("u")}
	}
	if g.pick(4) != 0 {
		c.item = map[string]*mtypes.Item{"pk": {S: aws.String("k")}}
		for _, a := range []string{"a", "b", "c", "x", "y", "#a", ":s"} {
			if g.pick(3) != 0 && (a[0] != '#' && a[0] != ':' || g.pick(5) == 0) {
				c.item[a] = g.value()
			}
		}
	}
	return c
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// native evaluates c as the engine does, reporting false when it leaves c
// to minidyn.
func (c condCase) native() (held, ok bool) {
	cond := compileCondition(c.expr)
	if cond == nil || !cond.bind(c.names, c.values) || !storedConvertible(c.item) {
		return false, false
	}
	return cond.root.eval(&condEnv{item: c.item, names: c.names, values: c.values})
}

// minidyn evaluates c with minidyn's interpreter, as its PutItem does.
func (c condCase) minidyn() (bool, error) {
	item := c.item
	if item == nil {
		item = map[string]*mtypes.Item{}
	}
	var lang interpreter.Language
	return lang.Match(interpreter.MatchInput{
		Expression: c.expr, ExpressionType: interpreter.ExpressionTypeConditional,
		Item: item, Attributes: c.values, Aliases: c.names,
	})
}

// agree reports a disagreement of the native evaluation of c with
// minidyn's, and whether the native one took c.
func (c condCase) agree(t *testing.T) bool {
	t.Helper()
	held, ok := c.native()
	if !ok {
		return false
	}
	var want bool
	err := recovered(func() (err error) { want, err = c.minidyn(); return err })
	if err != nil || held != want {
		t.Errorf("%q with names %v, values %s, item %s: native %v, minidyn %v, %v",
			c.expr, c.names, describeItem(c.values), describeItem(c.item), held, want, err)
	}
	return true
}

func describeItem(m map[string]*mtypes.Item) string {
	if m == nil {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s:%+v", k, *v))
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, " ") + "}"
}

// TestConditionAgreesWithMinidyn evaluates 30,000 seeded conditions both
// natively and with minidyn's interpreter: wherever the engine takes one,
// minidyn gives the same answer without an error. It also checks that the
// engine takes a good share of them, the claims' and commits' conditions
// among them, so that the comparison is not empty.
func TestConditionAgreesWithMinidyn(t *testing.T) {
	g := &condGen{rnd: rand.New(rand.NewPCG(7, 11))}
	const n = 30000
	taken, held := 0, 0
	for range n {
		c := g.draw()
		if c.agree(t) {
			taken++
			if h, _ := c.native(); h {
				held++
			}
		}
	}
	t.Logf("%d of %d conditions evaluated natively, %d of them held", taken, n, held)
	if taken < n/10 || held < taken/5 || held > taken-taken/5 {
		t.Errorf("%d of %d conditions evaluated natively, %d of them held: too few to compare", taken, n, held)
	}
	for _, body := range []string{benchClaim, benchCommit, benchOneTrip, benchPaymentPut} {
		for _, put := range putsOf(t, body) {
			c := condCase{expr: aws.ToString(put.ConditionExpression), names: put.ExpressionAttributeNames, values: typesItem(put.ExpressionAttributeValues)}
			if _, ok := c.native(); !ok {
				t.Errorf("%q is left to minidyn", c.expr)
			}
		}
	}
}

// TestConditionLeavesOddNamesToMinidyn checks the cases the engine must
// leave to minidyn because minidyn resolves names in its own way: an item
// attribute named like a placeholder, a name whose attribute is a
// document path, a placeholder or a value's placeholder, and a plain name
// that is a reserved word.
func TestConditionLeavesOddNamesToMinidyn(t *testing.T) {
	x := &mtypes.Item{S: aws.String("x")}
	for _, c := range []condCase{
		{expr: "#a = :v", names: map[string]string{"#a": "a"}, values: map[string]*mtypes.Item{":v": x},
			item: map[string]*mtypes.Item{"#a": x, "a": {S: aws.String("y")}}},
		{expr: "#a = :v", names: map[string]string{"#a": "a.b"}, values: map[string]*mtypes.Item{":v": x}},
		{expr: "#a = :v", names: map[string]string{"#a": "#a"}, values: map[string]*mtypes.Item{":v": x}},
		{expr: "#a = :v", names: map[string]string{"#a": ":v"}, values: map[string]*mtypes.Item{":v": x}},
		{expr: "attribute_exists(#a)", names: map[string]string{"#a": ""}},
		{expr: "state = :v", values: map[string]*mtypes.Item{":v": x}},
	} {
		if held, ok := c.native(); ok {
			t.Errorf("%q with names %v on %s: evaluated natively (%v)", c.expr, c.names, describeItem(c.item), held)
		}
	}
	ok := condCase{expr: "#a = :v", names: map[string]string{"#a": "a"}, values: map[string]*mtypes.Item{":v": x},
		item: map[string]*mtypes.Item{"a": x}}
	if held, native := ok.native(); !native || !held {
		t.Errorf("%q on %s: %v, %v; want it evaluated natively, true", ok.expr, describeItem(ok.item), held, native)
	}
}

// putsOf returns the PutItem requests of a PutItem or TransactWriteItems body.
func putsOf(t *testing.T, body string) []*server.PutItemInput {
	t.Helper()
	body = strings.ReplaceAll(body, "KEY", "k")
	var tr itemTransaction
	if fastDecodeTransaction([]byte(body), &tr) {
		var puts []*server.PutItemInput
		for _, a := range tr.TransactItems {
			puts = append(puts, a.Put)
		}
		return puts
	}
	in, ok := fastDecodePut([]byte(body))
	if !ok {
		t.Fatalf("%s does not decode", body)
	}
	return []*server.PutItemInput{in}
}

// FuzzConditionAgreesWithMinidyn is TestConditionAgreesWithMinidyn with the
// fuzzer's bytes for choices.
func FuzzConditionAgreesWithMinidyn(f *testing.F) {
	for i := range uint64(16) {
		seed := make([]byte, 64)
		r := rand.New(rand.NewPCG(i, i))
		for j := 0; j < len(seed); j += 8 {
			binary.LittleEndian.PutUint64(seed[j:], r.Uint64())
		}
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &condGen{data: data}
		g.draw().agree(t)
	})
}

// TestPutAgreesWithMinidynsPutItem applies 3,000 seeded PutItems, most of
// them conditional, some with values minidyn refuses, to two engines
// holding the same item: one with the engine's own path (the front's),
// one with minidyn's PutItem. Their errors and the tables after each are
// the same.
func TestPutAgreesWithMinidynsPutItem(t *testing.T) {
	ctx := context.Background()
	g := &condGen{rnd: rand.New(rand.NewPCG(3, 5))}
	ours, theirs := newEngine(), newEngine()
	for _, e := range []*engine{ours, theirs} {
		if _, err := e.c.CreateTable(ctx, &server.CreateTableInput{
			TableName:            aws.String("t"),
			AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
			KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
			BillingMode:          ddbtypes.BillingModePayPerRequest,
		}); err != nil {
			t.Fatal(err)
		}
	}
	conditional := 0
	for i := range 3000 {
		c := g.draw()
		key := fmt.Sprint("k", i)
		// minidyn files an attribute named like a placeholder under the
		// placeholder's attribute, in map order: its answers for such an
		// item vary from run to run.
		delete(c.item, "#a")
		if c.item != nil {
			c.item["pk"] = &mtypes.Item{S: aws.String(key)}
			for _, e := range []*engine{ours, theirs} {
				// Stored as it is, values minidyn would refuse included.
				tb := e.table("t")
				tb.Data[key] = typesItem(wireFromTypes(c.item))
				tb.SortedKeys = append(tb.SortedKeys, key)
				sort.Strings(tb.SortedKeys)
			}
		}
		in := &server.PutItemInput{
			TableName: aws.String("t"), ConditionExpression: &c.expr,
			ExpressionAttributeNames: c.names, ExpressionAttributeValues: wireFromTypes(c.values),
			Item: map[string]*server.AttributeValue{"pk": {S: aws.String(key)}, "v": {N: aws.String(fmt.Sprint(i))}},
		}
		if len(c.names) == 0 {
			in.ExpressionAttributeNames = nil
		}
		if len(c.values) == 0 {
			in.ExpressionAttributeValues = nil
		}
		_, native := c.native()
		if g.pick(4) == 0 {
			// Unconditional, sometimes with a value minidyn refuses or
			// without a valid key.
			in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = nil, nil, nil
			native = true
			switch g.pick(7) {
			case 0, 1:
				in.Item["w"] = wireFromTypes(map[string]*mtypes.Item{"w": g.value()})["w"]
			case 4:
				in.Item["w"] = &server.AttributeValue{SS: []*string{aws.String("a"), aws.String("a")}}
			case 2:
				delete(in.Item, "pk")
			case 3:
				in.Item["pk"] = &server.AttributeValue{N: aws.String("1")}
			}
		} else if native {
			conditional++
		}
		err := recovered(func() error { return ours.put(ctx, in) })
		want := recovered(func() error { _, err := theirs.putItem(ctx, in); return err })
		// Where both are minidyn's answers, their messages may name
		// different attributes (minidyn reports the first of a map's).
		if reflect.TypeOf(err) != reflect.TypeOf(want) || native && fmt.Sprint(err) != fmt.Sprint(want) ||
			errorCode(err) != errorCode(want) {
			t.Errorf("%q on %s: error %T %v, minidyn's %T %v", c.expr, describeItem(c.item), err, err, want, want)
		}
	}
	a, b := ours.table("t"), theirs.table("t")
	if !reflect.DeepEqual(a.Data, b.Data) || !reflect.DeepEqual(a.SortedKeys, b.SortedKeys) {
		t.Errorf("the tables differ after the writes: %d and %d items", len(a.Data), len(b.Data))
	}
	if conditional < 300 {
		t.Errorf("only %d of the writes' conditions were evaluated natively", conditional)
	}
}

// recovered runs f and returns its error, or a panic's as an error.
func recovered(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f()
}

// errorCode returns the API error code of err, or "".
func errorCode(err error) string {
	if ae, ok := errors.AsType[smithy.APIError](err); ok {
		return ae.ErrorCode()
	}
	return ""
}

// TestConditionLongerThanDynamoDBsLimitIsLeftToMinidyn: an expression
// over 4 KB, nested a thousand parentheses deep, is not compiled.
func TestConditionLongerThanDynamoDBsLimitIsLeftToMinidyn(t *testing.T) {
	within := strings.Repeat("(", 1000) + "attribute_exists(a)" + strings.Repeat(")", 1000)
	if compileCondition(within) == nil {
		t.Fatalf("a %d-byte expression is not compiled", len(within))
	}
	beyond := strings.Repeat("(", 3000) + "attribute_exists(a)" + strings.Repeat(")", 3000)
	if compileCondition(beyond) != nil {
		t.Errorf("a %d-byte expression is compiled", len(beyond))
	}
}
