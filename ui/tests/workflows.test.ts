import { describe, it, expect, vi, beforeEach } from 'vitest';
import { fireEvent, screen, waitFor } from '@testing-library/svelte';
import { api, resetFake, makeDetail, HOSTILE } from './fakeApi';
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
  api.workflows.mockResolvedValue({ items: [deploy, review, rollback] });
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
      api.workflows.mockResolvedValue({ items: [saved, review, rollback] });
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

    api.workflows.mockResolvedValue({ items: [{ ...deploy, version: 5, task_goal: 'Agent goal' }, review, rollback] });
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
    const h2 = document.querySelector('.wf-detail h2')!;
    await waitFor(() => expect(h2.textContent).toBe('deploy / k8s'));
    const dl = document.querySelector('.wf-detail dl.triggers')!;
    expect([...dl.querySelectorAll('dt')].map((d) => d.textContent)).toEqual(['env', 'branch']);
    expect([...dl.querySelectorAll('dd')].map((d) => d.textContent)).toEqual(['staging', 'main']);
    expect(screen.getByTestId('proc-edit').parentElement!.classList.contains('wf-toolbar')).toBe(true);
  });
});

