import { render } from 'preact';

function App() {
  return <main>Sightline</main>;
}

render(<App />, document.getElementById('app')!);
