package schemadiff

import (
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
)

// CreateDDL renders a whole schema as the CREATE TABLE statement Spark
// writes for it.
func CreateDDL(table string, sc *iceberg.Schema) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE " + table + " (")
	for i, f := range sc.Fields() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.Name + " " + f.Type.String())
		if f.Required {
			b.WriteString(" NOT NULL")
		}
	}
	b.WriteString(")")
	return b.String()
}

// AlterDDL renders changes as Iceberg DDL statements, as Spark writes
// them, joined by "; ".
func AlterDDL(table string, changes []FieldChange) string {
	stmts := make([]string, 0, len(changes))
	alter := "ALTER TABLE " + table + " "
	for _, c := range changes {
		var st string
		switch c.Kind {
		case "add_column":
			st = "ADD COLUMN " + c.Path + " " + strings.TrimSuffix(c.To, " not null")
			if strings.HasSuffix(c.To, " not null") {
				st += " NOT NULL"
			}
		case "drop_column":
			st = "DROP COLUMN " + c.Path
		case "rename_column":
			st = "RENAME COLUMN " + c.From + " TO " + c.To[strings.LastIndexByte(c.To, '.')+1:]
		case "update_column_type":
			st = "ALTER COLUMN " + c.Path + " TYPE " + c.To
		case "make_optional":
			st = "ALTER COLUMN " + c.Path + " DROP NOT NULL"
		case "make_required":
			st = "ALTER COLUMN " + c.Path + " SET NOT NULL"
		case "update_column_doc":
			st = "ALTER COLUMN " + c.Path + " COMMENT " + strconv.Quote(c.To)
		case "move_column":
			if c.After == "" {
				st = "ALTER COLUMN " + c.Path + " FIRST"
			} else {
				st = "ALTER COLUMN " + c.Path + " AFTER " + c.After
			}
		case "update_identifier_fields":
			if c.To == "" {
				st = "DROP IDENTIFIER FIELDS " + c.From
			} else {
				st = "SET IDENTIFIER FIELDS " + c.To
			}
		}
		stmts = append(stmts, alter+st)
	}
	return strings.Join(stmts, "; ")
}
