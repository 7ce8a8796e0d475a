package scenario

import "github.com/apache/iceberg-go"

// OrdersSchema is the schema of the bookshop orders table used by the tests
// and the demo: order_id long (required, the identifier field), customer
// string, status string, amount double.
func OrdersSchema() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "order_id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "customer", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "status", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
	)
}

// Order is one row of [OrdersSchema] in the form the mutations take.
func Order(id int64, customer, status string, amount float64) map[string]any {
	return map[string]any{"order_id": id, "customer": customer, "status": status, "amount": amount}
}
