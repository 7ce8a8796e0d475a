package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Marks are a short text per coordination partition that its owner keeps
// in the group's committed offsets (the metadata of the partition's
// offset, which stays 0: the topic has no records). A member writes
// only the marks of the partitions it owns, and Kafka takes a commit only
// from a member of the group's current generation (it checks the member
// id and generation): a member that gave a partition up in an earlier
// generation, left, or was fenced cannot overwrite what the next owner
// wrote.
// Signals keep there how far the partition's tables have read the
// signal topic.

// PartitionOf is the coordination partition of table.
func (m *Member) PartitionOf(table string) int32 { return Partition(table, m.o.Config.Partitions) }

// SaveMarks commits marks for partitions this member owns. A partition
// it no longer owns, or a rebalance in progress, fails the commit (the
// caller tries again with what it holds then).
//
// The commit is written as a request of its own because franz-go's
// CommitOffsets carries no metadata; the group's member id, generation
// and instance id are the client's own (GroupMetadata), so Kafka fences
// it exactly as it would the client's commits.
func (m *Member) SaveMarks(ctx context.Context, marks map[int32]string) error {
	if m.cl == nil {
		return errors.New("cluster: not in the group yet")
	}
	member, gen := m.cl.GroupMetadata()
	if gen < 0 {
		return errors.New("cluster: not in the group yet")
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = m.o.Config.Group, member, gen
	if m.instance != "" {
		req.InstanceID = kmsg.StringPtr(m.instance)
	}
	// OffsetCommit v10 names the topic by its id, earlier versions by
	// its name: the request carries both, as franz-go's own commits do.
	id, err := m.topicID(ctx)
	if err != nil {
		return err
	}
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = m.o.Config.Topic, id
	for p, meta := range marks {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.Metadata = p, 0, kmsg.StringPtr(meta)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		return fmt.Errorf("cluster: group %s: commit marks: %w", m.o.Config.Group, err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("cluster: group %s: commit the mark of partition %d: %w", m.o.Config.Group, p.Partition, err)
			}
		}
	}
	return nil
}

// topicID is the coordination topic's id, looked up once.
func (m *Member) topicID(ctx context.Context) ([16]byte, error) {
	m.idMu.Lock()
	defer m.idMu.Unlock()
	if m.coordID != ([16]byte{}) {
		return m.coordID, nil
	}
	ts, err := kadm.NewClient(m.cl).ListTopics(ctx, m.o.Config.Topic)
	if err == nil {
		err = ts.Error()
	}
	if err != nil {
		return [16]byte{}, fmt.Errorf("cluster: coordination topic %s: %w", m.o.Config.Topic, err)
	}
	m.coordID = ts[m.o.Config.Topic].ID
	return m.coordID, nil
}

// LoadMarks returns the committed marks of parts; a partition that has
// none is missing from the map.
func (m *Member) LoadMarks(ctx context.Context, parts []int32) (map[int32]string, error) {
	if m.cl == nil {
		return nil, errors.New("cluster: not in the group yet")
	}
	offs, err := kadm.NewClient(m.cl).FetchOffsets(ctx, m.o.Config.Group)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return nil, fmt.Errorf("cluster: group %s: fetch marks: %w", m.o.Config.Group, err)
	}
	out := map[int32]string{}
	for _, p := range parts {
		if o, ok := offs.Lookup(m.o.Config.Topic, p); ok {
			if o.Err != nil {
				return nil, fmt.Errorf("cluster: group %s: fetch the mark of partition %d: %w", m.o.Config.Group, p, o.Err)
			}
			if o.Metadata != "" {
				out[p] = o.Metadata
			}
		}
	}
	return out, nil
}
