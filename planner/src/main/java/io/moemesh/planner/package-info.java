/**
 * The SLA planner (docs/planner.md): sizes prefill and decode separately to hold a TTFT and an ITL target.
 *
 * <p>One round per interval, for each {@link io.moemesh.planner.Stage}: discovery gives the replicas' metrics URLs
 * ({@code connect.ReplicaDiscovery}) → each is scraped ({@code observe.MetricsScraper}) → the interval since the last
 * round is observed ({@code observe.StageObserver}, a pure function of two scrapes) → the planner decides
 * ({@code decide.Planner}: demand ÷ profiled capacity × correction, bounds, cool-downs) → the decision is logged and
 * exported ({@code loop.PlannerMetrics}) → the connector scales the stage ({@code connect.ReplicaConnector}).
 * {@code loop.PlanningRound} is that round; {@code service} runs it on a timer inside Quarkus, the only package that
 * imports the framework.
 */
package io.moemesh.planner;
