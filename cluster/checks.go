package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ensureCoordinationTopic creates the coordination topic, or checks that
// the existing one has the configured partition count: members that
// hashed tables over different counts would follow a table twice.
func ensureCoordinationTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32) error {
	_, err := adm.CreateTopic(ctx, partitions, -1, nil, topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("cluster: create coordination topic %s: %w", topic, err)
	}
	var d kadm.TopicDetail
	err = untilKnown(ctx, func() error {
		details, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return err
		}
		var ok bool
		if d, ok = details[topic]; !ok {
			return kerr.UnknownTopicOrPartition
		}
		return d.Err
	})
	if err != nil {
		return fmt.Errorf("cluster: describe coordination topic %s: %w", topic, err)
	}
	if n := int32(len(d.Partitions)); n != partitions {
		return fmt.Errorf("cluster: coordination topic %s has %d partitions, the configuration says cluster.partitions: %d: "+
			"members must hash tables over the same count; set cluster.partitions to %d (or use a new cluster.topic)", topic, n, partitions, n)
	}
	return nil
}

// checkCheckpointTopic creates the checkpoint topic compacted, with
// min(3, brokers) replicas unless minReplicas says more, or checks that the
// existing one is compacted and replicated at least minReplicas times: an
// uncompacted topic would lose checkpoints to retention, and an
// unreplicated one with its broker.
func checkCheckpointTopic(ctx context.Context, adm *kadm.Client, topic string, minReplicas int16) error {
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("cluster: broker metadata: %w", err)
	}
	if minReplicas == 0 {
		minReplicas = int16(min(3, len(md.Brokers)))
	}
	compact := "compact"
	_, err = adm.CreateTopic(ctx, 1, minReplicas, map[string]*string{"cleanup.policy": &compact}, topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("cluster: create checkpoint topic %s: %w", topic, err)
	}
	var rc kadm.ResourceConfig
	err = untilKnown(ctx, func() error {
		configs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			return err
		}
		if rc, err = configs.On(topic, nil); err != nil {
			return err
		}
		return rc.Err
	})
	if err != nil {
		return fmt.Errorf("cluster: describe checkpoint topic %s: %w", topic, err)
	}
	policy := ""
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" && c.Value != nil {
			policy = *c.Value
		}
	}
	if !strings.Contains(policy, "compact") {
		return fmt.Errorf("cluster: checkpoint topic %s has cleanup.policy=%q: it must be compacted, or retention deletes the checkpoints of quiet tables; "+
			"run kafka-configs --alter --entity-type topics --entity-name %s --add-config cleanup.policy=compact", topic, policy, topic)
	}
	var details kadm.TopicDetails
	err = untilKnown(ctx, func() error {
		var err error
		if details, err = adm.ListTopics(ctx, topic); err != nil {
			return err
		}
		return details[topic].Err
	})
	if err != nil {
		return fmt.Errorf("cluster: describe checkpoint topic %s: %w", topic, err)
	}
	for _, p := range details[topic].Partitions {
		if n := int16(len(p.Replicas)); n < minReplicas {
			return fmt.Errorf("cluster: checkpoint topic %s partition %d has %d replica(s), fewer than %d: the cluster's state would die with a broker; "+
				"raise its replication factor, or set cluster.min_replicas", topic, p.Partition, n, minReplicas)
		}
	}
	return nil
}

// untilKnown runs describe until it does not fail with
// UNKNOWN_TOPIC_OR_PARTITION or LEADER_NOT_AVAILABLE, or ctx is done: a
// topic just created is not known to every broker (nor to the one that
// created it, for its configs) at once.
func untilKnown(ctx context.Context, describe func() error) error {
	return retryWhile(ctx, describe, kerr.UnknownTopicOrPartition, kerr.LeaderNotAvailable)
}

// retryWhile runs describe until it fails with none of the errors
// transient, or ctx is done.
func retryWhile(ctx context.Context, describe func() error, transient ...error) error {
	var last error
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := describe()
		if err != nil && last != nil && ctx.Err() != nil {
			// ctx ran out while a request was on its way: the last
			// answer says why the wait failed, the deadline does not.
			return last
		}
		if err == nil || !slices.ContainsFunc(transient, func(t error) bool { return errors.Is(err, t) }) {
			return err
		}
		last = err
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// checkPeers refuses to join a group whose live members run another
// pipeline configuration or a newer version, or are not icecdc at all.
// self is this member's client id, skipped when found.
func checkPeers(ctx context.Context, adm *kadm.Client, group, version, fingerprint, self string) error {
	// The group coordinator is not available for a moment on a new
	// cluster, while the broker creates __consumer_offsets.
	var (
		g  kadm.DescribedGroup
		ok bool
	)
	err := retryWhile(ctx, func() error {
		groups, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return err
		}
		if g, ok = groups[group]; !ok {
			return nil
		}
		return g.Err
	}, kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress, kerr.NotCoordinator)
	switch {
	case errors.Is(err, kerr.GroupIDNotFound):
		return nil // no member yet
	case err != nil:
		return fmt.Errorf("cluster: describe group %s: %w", group, err)
	case !ok:
		return nil
	}
	for _, m := range g.Members {
		if m.ClientID == self {
			continue
		}
		v, fp, name, ok := parseClientID(m.ClientID)
		if !ok {
			return fmt.Errorf("cluster: group %s has a member that is not an icecdc cluster member (client id %q, host %s): choose another cluster.group",
				group, m.ClientID, m.ClientHost)
		}
		if fp != fingerprint {
			return fmt.Errorf("cluster: group %s: member %s (host %s) runs another pipeline configuration (fingerprint %s, this one %s): "+
				"every member of a group must have the same name, tables, sink and cluster settings; stop the others first or choose another cluster.group",
				group, name, m.ClientHost, fp, fingerprint)
		}
		if c, ok := compareVersions(version, v); ok && c < 0 || !ok && v != version {
			return fmt.Errorf("cluster: group %s: member %s (host %s) runs icecdc %s, this one is %s: a member may not be older than the group; upgrade this one",
				group, name, m.ClientHost, v, version)
		}
	}
	return nil
}

// Owners maps each table (by name) to the name of the member whose
// assignment holds its coordination partition, as the group coordinator
// knows it now; a table no member holds is absent.
//
// A coordinator that is moving or loading is asked again until ctx is
// done.
func Owners(ctx context.Context, adm *kadm.Client, c Config, tables []string) (map[string]string, error) {
	var g kadm.DescribedGroup
	err := retryWhile(ctx, func() error {
		groups, err := adm.DescribeGroups(ctx, c.Group)
		if err != nil {
			return err
		}
		g = groups[c.Group]
		return g.Err
	}, kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress, kerr.NotCoordinator)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: describe group %s: %w", c.Group, err)
	}
	byPart := map[int32]string{}
	for _, m := range g.Members {
		_, _, name, ok := parseClientID(m.ClientID)
		if !ok {
			name = m.MemberID
		}
		a, ok := m.Assigned.AsConsumer()
		if !ok {
			continue
		}
		for _, t := range a.Topics {
			if t.Topic != c.Topic {
				continue
			}
			for _, p := range t.Partitions {
				byPart[p] = name
			}
		}
	}
	out := map[string]string{}
	for _, t := range tables {
		if name, ok := byPart[Partition(t, c.Partitions)]; ok {
			out[t] = name
		}
	}
	return out, nil
}
