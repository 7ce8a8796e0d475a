package signals

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/icecdc/icecdc/rowfilter"
	"github.com/icecdc/icecdc/snapreq"
)

// The signal types icecdc acts on, as Debezium names them.
const (
	TypeExecuteSnapshot = "execute-snapshot"
	TypeStopSnapshot    = "stop-snapshot"
	TypePauseSnapshot   = "pause-snapshot"
	TypeResumeSnapshot  = "resume-snapshot"
)

// The snapshot types of execute-snapshot.
const (
	KindIncremental = "incremental"
	KindBlocking    = "blocking"
)

// Signal is one signal record's value.
type Signal struct {
	ID   string          `json:"id"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// Action is what a signal asks of the pipeline: a snapshot of each of
// Tables (with its filter), or a control of their reads.
type Action struct {
	Signal  Signal
	Kind    string            // execute-snapshot: incremental or blocking
	Tables  []string          // as the pipeline follows them
	Filters map[string]string // table -> additional-conditions filter
	Control snapreq.SnapshotControl
}

// snapshotData is the data of the snapshot signals.
type snapshotData struct {
	DataCollections      []string `json:"data-collections"`
	Type                 string   `json:"type"`
	AdditionalConditions []struct {
		DataCollection string `json:"data-collection"`
		Filter         string `json:"filter"`
	} `json:"additional-conditions"`
	AdditionalCondition string `json:"additional-condition"`
	SurrogateKey        string `json:"surrogate-key"`
}

// Parse reads a signal record's value and resolves it against the
// tables the pipeline follows. Its error is one line saying why the
// signal is refused (and the signal's id when it has one).
func Parse(value []byte, tables []string) (Action, error) {
	var sig Signal
	d := json.NewDecoder(bytes.NewReader(value))
	if err := d.Decode(&sig); err != nil {
		return Action{}, fmt.Errorf("signal: not a JSON object {\"id\", \"type\", \"data\"}: %v", err)
	}
	if d.More() {
		return Action{}, errors.New("signal: more than one JSON value in the record")
	}
	a := Action{Signal: sig}
	fail := func(format string, args ...any) (Action, error) {
		return a, fmt.Errorf("signal %s (%s): %s", quote(sig.ID), quote(sig.Type), fmt.Sprintf(format, args...))
	}
	if sig.ID == "" {
		return fail("no id: a signal needs one, so that its notifications can name it")
	}
	if len(sig.ID) > MaxIDBytes {
		// Named by its place in the topic instead (see router.decode).
		a.Signal.ID = ""
		return fail("an id of %d bytes: at most %d", len(sig.ID), MaxIDBytes)
	}
	var data snapshotData
	if len(sig.Data) > 0 && !bytes.Equal(bytes.TrimSpace(sig.Data), []byte("null")) {
		raw := sig.Data
		// Debezium's signal table holds data as a JSON string; the Kafka
		// channel takes an object. Both are read.
		var text string
		if json.Unmarshal(raw, &text) == nil {
			raw = []byte(text)
		}
		if err := json.Unmarshal(raw, &data); err != nil {
			return fail("data: %v", err)
		}
	}
	if len(data.DataCollections) > MaxCollections || len(data.AdditionalConditions) > MaxCollections {
		return fail("data: more than %d data-collections or additional-conditions (%d, %d)", MaxCollections, len(data.DataCollections), len(data.AdditionalConditions))
	}
	switch sig.Type {
	case TypeExecuteSnapshot:
		if err := a.executeSnapshot(&data, tables); err != nil {
			return fail("%s", err)
		}
	case TypeStopSnapshot, TypePauseSnapshot, TypeResumeSnapshot:
		if t := strings.ToLower(data.Type); t != "" && t != KindIncremental && t != KindBlocking {
			return fail("data.type %s: want incremental or blocking", quote(data.Type))
		}
		a.Control = map[string]snapreq.SnapshotControl{TypeStopSnapshot: snapreq.StopSnapshot, TypePauseSnapshot: snapreq.PauseSnapshot, TypeResumeSnapshot: snapreq.ResumeSnapshot}[sig.Type]
		a.Tables = tables
		if len(data.DataCollections) > 0 {
			var err error
			if a.Tables, err = match(data.DataCollections, tables); err != nil {
				return fail("%v", err)
			}
		}
	case "":
		return fail("no type")
	default:
		return fail("unknown type; icecdc takes %s, %s, %s and %s", TypeExecuteSnapshot, TypeStopSnapshot, TypePauseSnapshot, TypeResumeSnapshot)
	}
	return a, nil
}

// executeSnapshot resolves an execute-snapshot signal's kind, tables and
// filters into a; its error says why the signal is refused.
func (a *Action) executeSnapshot(data *snapshotData, tables []string) error {
	a.Kind = strings.ToLower(data.Type)
	if a.Kind == "" {
		a.Kind = KindIncremental
	}
	if a.Kind != KindIncremental && a.Kind != KindBlocking {
		return fmt.Errorf("data.type %s: want incremental or blocking", quote(data.Type))
	}
	if data.SurrogateKey != "" {
		return errors.New("data.surrogate-key: not accepted; icecdc reads a table's rows by file and position, not by key")
	}
	if len(data.DataCollections) == 0 {
		return errors.New("data.data-collections: missing or empty; list the tables to read (names or regular expressions)")
	}
	var err error
	if a.Tables, err = match(data.DataCollections, tables); err != nil {
		return err
	}
	a.Filters = map[string]string{}
	for _, t := range a.Tables {
		if data.AdditionalCondition != "" {
			a.Filters[t] = data.AdditionalCondition
		}
	}
	for i, c := range data.AdditionalConditions {
		if err := a.addCondition(i, c.DataCollection, c.Filter); err != nil {
			return err
		}
	}
	if data.AdditionalCondition != "" {
		if _, err := rowfilter.Parse(data.AdditionalCondition); err != nil {
			return fmt.Errorf("data.additional-condition %q: %v", rowfilter.Redact(data.AdditionalCondition), err)
		}
	}
	return nil
}

// addCondition sets the filter of additional-conditions[i] on the tables
// to read that its data collection matches and that have none yet: the
// first condition for a table holds.
func (a *Action) addCondition(i int, collection, filter string) error {
	re, err := collectionPattern(collection)
	if err != nil {
		return fmt.Errorf("data.additional-conditions[%d].data-collection: %v", i, err)
	}
	if strings.TrimSpace(filter) == "" {
		return fmt.Errorf("data.additional-conditions[%d].filter: empty", i)
	}
	if _, err := rowfilter.Parse(filter); err != nil {
		return fmt.Errorf("data.additional-conditions[%d].filter %q: %v", i, rowfilter.Redact(filter), err)
	}
	hit := false
	for _, t := range a.Tables {
		if re.MatchString(t) {
			hit = true
			if _, set := a.Filters[t]; !set {
				a.Filters[t] = filter
			}
		}
	}
	if !hit {
		return fmt.Errorf("data.additional-conditions[%d].data-collection %s matches none of the tables to read (%s)", i, quote(collection), listTables(a.Tables))
	}
	return nil
}

// match returns the tables the data collections name, in the order the
// pipeline lists them; a collection that matches none is an error.
func match(collections, tables []string) ([]string, error) {
	hit := map[string]bool{}
	for i, c := range collections {
		re, err := collectionPattern(c)
		if err != nil {
			return nil, fmt.Errorf("data.data-collections[%d]: %v", i, err)
		}
		found := false
		for _, t := range tables {
			if re.MatchString(t) {
				hit[t], found = true, true
			}
		}
		if !found {
			return nil, fmt.Errorf("data.data-collections[%d] %s matches no table the pipeline follows (%s)", i, quote(c), listTables(tables))
		}
	}
	var out []string
	for _, t := range tables {
		if hit[t] {
			out = append(out, t)
		}
	}
	return out, nil
}
