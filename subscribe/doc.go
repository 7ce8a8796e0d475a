// Package subscribe is a table's column subscription (tables[].columns):
// only the updates that change a subscribed column are delivered, inserts
// and deletes always, each image projected to the subscribed columns and
// the key. cmd/icecdc hands a table its Columns as a cdc.Policy; the
// pipeline resolves it when the table is loaded and runs the Subscription
// after the shaping, so that it projects the shaped images.
package subscribe
