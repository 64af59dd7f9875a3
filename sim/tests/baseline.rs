//! The raw-madsim baseline programs carry the messages they are asked to carry: a message lost on
//! the way (a wrong address, an endpoint not bound) would make a baseline cheaper than the load it
//! stands for, and the harness's ratio to it look worse or better than it is.

/// 3 nodes, 60 simulated seconds, 3,000 timers and 300 messages: each node sends 100.
#[test]
fn both_baselines_deliver_every_message() {
    for seed in 0..3 {
        assert_eq!(sim::runtime::baseline(seed, 3, 60_000, 3_000, 300), 300);
        assert_eq!(sim::runtime::baseline_net(seed, 3, 60_000, 3_000, 300), 300);
    }
    // No messages: nothing received, and the timers alone run.
    assert_eq!(sim::runtime::baseline(7, 2, 10_000, 100, 0), 0);
    assert_eq!(sim::runtime::baseline_net(7, 2, 10_000, 100, 0), 0);
}
