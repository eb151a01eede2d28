import { describe, it, expect, vi, beforeEach } from 'vitest';
import { fireEvent, screen, waitFor } from '@testing-library/svelte';
import { api, resetFake, makeDetail, HOSTILE, workflowsOf } from './fakeApi';
import { renderAt, ids } from './helpers';

vi.mock('../src/api', async () => (await import('./fakeApi')).api);

const deploy = makeDetail('mem_w1', {
  type: 'procedural',
  content: 'deploy the app',
  task_goal: 'Deploy to staging',
  steps: ['build', 'push image', 'kubectl apply'],
  trigger_conditions: { env: 'staging', branch: 'main' },
  workflow_name: 'deploy',
  skill_name: 'k8s',
  version: 3,
  reflection_notes: [
    { failure_type: 'tool_error', failure_description: 'kubectl timed out', lessons_learned: 'raise timeout', suggested_improvements: 'add --wait', timestamp: '2025-02-01T00:00:00.000Z', actor: 'agent:claude' },
    { failure_type: 'user_feedback', failure_description: HOSTILE, timestamp: '2025-02-02T00:00:00.000Z' },
  ],
});
const review = makeDetail('mem_w2', { type: 'procedural', task_goal: 'Review a PR', steps: ['read diff'], workflow_name: 'code-review', skill_name: null, version: 1 });
const rollback = makeDetail('mem_w3', { type: 'procedural', task_goal: 'Roll back', steps: ['helm rollback'], workflow_name: 'deploy', skill_name: 'helm', version: 1 });

beforeEach(() => {
  resetFake();
  api.workflows.mockImplementation(workflowsOf([deploy, review, rollback]));
  api.history.mockResolvedValue({
    items: [
      { version: 1, at: '2025-01-01T00:00:00.000Z', actor: 'agent:claude', task_goal: 'Deploy', steps: ['build', 'kubectl apply'], trigger_conditions: { env: 'staging' }, workflow_name: 'deploy', skill_name: 'k8s', content: 'deploy the app' },
      { version: 2, at: '2025-01-05T00:00:00.000Z', actor: 'user', task_goal: 'Deploy to staging', steps: ['build', 'kubectl apply'], trigger_conditions: { env: 'staging' }, workflow_name: 'deploy', skill_name: 'k8s', content: 'deploy the app' },
    ],
  });
});

async function open() {
  await renderAt('workflows');
  await waitFor(() => expect(ids('workflow-row')).toHaveLength(3));
}

describe('workflows', () => {
  it('groups procedures by workflow and shows goal, ordered steps and triggers', async () => {
    await open();
    const groups = screen.getAllByTestId('workflow-group').map((g) => g.querySelector('h3')!.textContent);
    expect(groups).toEqual(['code-review', 'deploy']);
    expect(ids('workflow-row')).toEqual(['mem_w2', 'mem_w1', 'mem_w3']);
    await fireEvent.click(screen.getAllByTestId('workflow-row')[1]);
    expect(screen.getByTestId('proc-goal-text')).toHaveTextContent('Deploy to staging');
    const steps = [...screen.getByTestId('proc-steps-list').querySelectorAll('li')].map((li) => li.textContent);
    expect(steps).toEqual(['build', 'push image', 'kubectl apply']);
    expect(screen.getByText('branch')).toBeInTheDocument();
  });

  it('renders the reflection-note timeline as text', async () => {
    await open();
    await fireEvent.click(screen.getAllByTestId('workflow-row')[1]);
    const notes = screen.getAllByTestId('reflection-note');
    expect(notes).toHaveLength(2);
    expect(notes[0]).toHaveTextContent('tool_error');
    expect(notes[0]).toHaveTextContent('kubectl timed out');
    expect(notes[0]).toHaveTextContent('raise timeout');
    expect(notes[0]).toHaveTextContent('add --wait');
    expect(notes[0]).toHaveTextContent('agent:claude');
    expect(notes[1].querySelector('.note-desc')!.textContent).toBe(HOSTILE);
    expect(document.querySelector('img[src="x"]')).toBeNull();
  });

  it('diffs consecutive versions field by field, including the current one', async () => {
    await open();
    await fireEvent.click(screen.getAllByTestId('workflow-row')[1]);
    await waitFor(() => expect(screen.getAllByTestId('version-entry')).toHaveLength(3));
    const [, v2, v3] = screen.getAllByTestId('version-entry');
    expect([...v2.querySelectorAll('[data-testid=version-diff]')].map((r) => r.getAttribute('data-field'))).toEqual(['goal']);
    expect(v2).toHaveTextContent('Deploy to staging');
    const v3Fields = [...v3.querySelectorAll('[data-testid=version-diff]')].map((r) => r.getAttribute('data-field'));
    expect(v3Fields).toEqual(['steps', 'trigger conditions']);
  });

  it('saves with expectedVersion = the loaded version', async () => {
    const saved = { ...deploy, version: 4, task_goal: 'Deploy safely' };
    api.updateProcedure.mockImplementation(async () => {
      api.workflows.mockImplementation(workflowsOf([saved, review, rollback]));
      return saved;
    });
    await open();
    await fireEvent.click(screen.getAllByTestId('workflow-row')[1]);
    await fireEvent.click(screen.getByTestId('proc-edit'));
    await fireEvent.input(screen.getByTestId('proc-goal'), { target: { value: 'Deploy safely' } });
    await fireEvent.click(screen.getByTestId('proc-save'));
    await waitFor(() => expect(api.updateProcedure).toHaveBeenCalledWith('mem_w1', 3, { taskGoal: 'Deploy safely' }));
    await waitFor(() => expect(screen.getByTestId('proc-goal-text')).toHaveTextContent('Deploy safely'));
  });

  it('on conflict says so, keeps the draft, and reloads on request', async () => {
    api.updateProcedure.mockRejectedValue({ code: 'conflict', message: 'version conflict on mem_w1: expected version 3, current version is 5' });
    api.showMemory.mockResolvedValue({ ...deploy, version: 5 });
    await open();
    await fireEvent.click(screen.getAllByTestId('workflow-row')[1]);
    await fireEvent.click(screen.getByTestId('proc-edit'));
    await fireEvent.input(screen.getByTestId('proc-steps'), { target: { value: 'build\ntest\ndeploy' } });
    await fireEvent.click(screen.getByTestId('proc-save'));
    const banner = await screen.findByTestId('conflict-banner');
    expect(banner).toHaveTextContent('An agent changed this procedure (now version 5) — your edit was not saved');
    expect(api.updateProcedure).toHaveBeenCalledWith('mem_w1', 3, { steps: ['build', 'test', 'deploy'] });
    expect(api.updateProcedure).toHaveBeenCalledTimes(1);
    // The draft is still there; nothing was overwritten.
    expect((screen.getByTestId('proc-steps') as HTMLTextAreaElement).value).toBe('build\ntest\ndeploy');

    api.workflows.mockImplementation(workflowsOf([{ ...deploy, version: 5, task_goal: 'Agent goal' }, review, rollback]));
    const n = api.workflows.mock.calls.length;
    await fireEvent.click(screen.getByTestId('conflict-reload'));
    await waitFor(() => expect(api.workflows.mock.calls.length).toBe(n + 1));
    await waitFor(() => expect(screen.getByTestId('proc-goal-text')).toHaveTextContent('Agent goal'));
    expect(screen.queryByTestId('conflict-banner')).toBeNull();
    expect(api.updateProcedure).toHaveBeenCalledTimes(1);
  });

  it('reads the current version from the conflict message if show_memory fails', async () => {
    api.updateProcedure.mockRejectedValue({ code: 'conflict', message: 'version conflict on mem_w1: expected version 3, current version is 7' });
    api.showMemory.mockRejectedValue({ code: 'db_unavailable', message: 'locked' });
    await open();
    await fireEvent.click(screen.getAllByTestId('workflow-row')[1]);
    await fireEvent.click(screen.getByTestId('proc-edit'));
    await fireEvent.input(screen.getByTestId('proc-goal'), { target: { value: 'x' } });
    await fireEvent.click(screen.getByTestId('proc-save'));
    expect(await screen.findByTestId('conflict-banner')).toHaveTextContent('now version 7');
  });

  it('does not duplicate the live version when history already contains it', async () => {
    api.history.mockResolvedValue({
      items: [
        { version: 2, at: '2025-01-05T00:00:00.000Z', actor: 'user', task_goal: 'Deploy', steps: ['build'], trigger_conditions: null, workflow_name: 'deploy', skill_name: 'k8s', content: 'deploy the app', current: false },
        { version: 3, at: '2025-01-06T00:00:00.000Z', actor: 'agent:x', task_goal: 'Deploy to staging', steps: ['build', 'push image', 'kubectl apply'], trigger_conditions: { env: 'staging', branch: 'main' }, workflow_name: 'deploy', skill_name: 'k8s', content: 'deploy the app', current: true },
      ],
    });
    await open();
    await fireEvent.click(screen.getAllByTestId('workflow-row')[1]);
    await waitFor(() => expect(screen.getAllByTestId('version-entry').map((e) => e.dataset.version)).toEqual(['2', '3']));
    const fields = [...screen.getAllByTestId('version-entry')[1].querySelectorAll('[data-testid=version-diff]')].map((r) => r.getAttribute('data-field'));
    expect(fields).toEqual(['goal', 'steps', 'trigger conditions']);
  });

  it('title reads "workflow / skill"; triggers sit key next to value; edit is a normal button', async () => {
    await open();
    // The first procedure of the list (code-review) is selected; open the deploy one.
    await fireEvent.click(document.querySelector('[data-testid="workflow-row"][data-id="mem_w1"]')!);
    const h2 = document.querySelector('.wf-detail h2')!;
    await waitFor(() => expect(h2.textContent).toBe('deploy / k8s'));
    const dl = document.querySelector('.wf-detail dl.triggers')!;
    expect([...dl.querySelectorAll('dt')].map((d) => d.textContent)).toEqual(['env', 'branch']);
    expect([...dl.querySelectorAll('dd')].map((d) => d.textContent)).toEqual(['staging', 'main']);
    expect(screen.getByTestId('proc-edit').parentElement!.classList.contains('wf-toolbar')).toBe(true);
  });
});


describe('workflows at scale', () => {
  /** `n` procedures in 30 workflows, each with three steps. */
  function procedures(n: number) {
    return Array.from({ length: n }, (_, i) =>
      makeDetail(`mem_p${String(i).padStart(5, '0')}`, {
        type: 'procedural',
        task_goal: `Rotate the ${i % 2 ? 'billing' : 'search'} keys, run ${i}`,
        steps: ['open the vault', `rotate key ${i}`, 'restart the service'],
        workflow_name: `wf-${String(i % 30).padStart(2, '0')}`,
        version: 1,
      }),
    );
  }

  it('renders only the procedures on screen of 9,900 and counts them', async () => {
    api.workflows.mockImplementation(workflowsOf(procedures(9900)));
    await renderAt('workflows');
    await waitFor(() => expect(screen.getByTestId('workflow-count')).toHaveTextContent('9,900'));
    const n = ids('workflow-row').length;
    expect(n).toBeGreaterThan(5);
    expect(n).toBeLessThan(40);
    // Only the first page was read; the groups' counts place the rest.
    expect(api.workflows).toHaveBeenCalledTimes(1);
    expect(api.workflows).toHaveBeenLastCalledWith({ offset: 0, limit: 100 });
    const list = screen.getByTestId('workflow-list');
    // Far down: group wf-20 starts after 20 groups of 330 procedures (30 + 330 × 50 px each).
    list.scrollTop = 20 * (30 + 330 * 50);
    await fireEvent.scroll(list);
    await waitFor(() => expect(ids('workflow-row')).toContain('mem_p00020'));
    expect(api.workflows).toHaveBeenLastCalledWith({ offset: 6600, limit: 100 });
  });

  it('searches goal, steps and names; every word must match', async () => {
    api.workflows.mockImplementation(workflowsOf(procedures(300)));
    await renderAt('workflows');
    await waitFor(() => expect(screen.getByTestId('workflow-count')).toHaveTextContent('300'));
    await fireEvent.input(screen.getByTestId('workflow-search'), { target: { value: 'BILLING key 17' } });
    // Odd runs are billing; "17" in the step "rotate key 17", 117, 171, 173…
    await waitFor(() => expect(screen.getByTestId('workflow-shown')).toHaveTextContent('of 300 procedures match'));
    const shown = ids('workflow-row');
    expect(shown.length).toBeGreaterThan(0);
    expect(shown).toContain('mem_p00017');
    expect(shown).toContain('mem_p00117');
    expect(shown).not.toContain('mem_p00016');
    await fireEvent.input(screen.getByTestId('workflow-search'), { target: { value: 'wf-07 mem_p00007' } });
    await waitFor(() => expect(ids('workflow-row')).toEqual(['mem_p00007']));
    expect(screen.getAllByTestId('workflow-group').map((g) => g.querySelector('h3')!.textContent)).toEqual(['wf-07']);
  });

  it('shows a version change as a line diff: what was removed and added, unchanged steps folded', async () => {
    const steps = ['check out', 'build', 'test', 'package', 'sign', 'upload', 'announce'];
    const edited = [...steps.slice(0, 4), 'sign with the release key', ...steps.slice(5), 'close the milestone'];
    api.workflows.mockImplementation(workflowsOf([makeDetail('mem_r', { type: 'procedural', task_goal: 'Release', steps: edited, workflow_name: 'release', version: 2 })]));
    api.history.mockResolvedValue({
      items: [{ version: 1, at: '2025-01-01T00:00:00.000Z', actor: 'user', task_goal: 'Release', steps, trigger_conditions: null, workflow_name: 'release', skill_name: null, content: 'release' }],
    });
    await renderAt('workflows');
    await waitFor(() => expect(screen.getAllByTestId('version-entry')).toHaveLength(2));
    const v2 = screen.getAllByTestId('version-entry')[1];
    const diff = v2.querySelector('[data-testid=version-diff][data-field=steps]')!;
    const text = (id: string) => [...diff.querySelectorAll(`[data-testid=${id}]`)].map((e) => e.textContent);
    expect(text('diff-del')).toEqual(['−5.sign']);
    expect(text('diff-add')).toEqual(['+5.sign with the release key', '+8.close the milestone']);
    // Context: one unchanged step on each side of a change; the first three are folded.
    expect(text('diff-skip')).toEqual(['⋯ 3 unchanged steps']);
    expect(text('diff-same')).toEqual([' 4.package', ' 6.upload', ' 7.announce']);
    // Not every step twice, as a before/after listing would.
    expect(diff.textContent).not.toContain('check out');
  });
});
