/**
 * The planner's Quarkus shell: {@link io.moemesh.planner.service.PlannerConfig} ({@code moemesh.planner.*}), the
 * timer that runs a {@link io.moemesh.planner.loop.PlanningRound} every interval, {@code /q/metrics} and
 * {@code /q/health}. The observation ({@code observe}), the decision ({@code decide}), the connectors ({@code connect})
 * and the round ({@code loop}) import no framework and are tested without it.
 */
package io.moemesh.planner.service;
